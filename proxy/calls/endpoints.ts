// The proxy's half of the endpoint table (core/endpoints.ts, whose paths key it, so the compiler
// holds the two halves together): each endpoint's request schema, and the output bound its calls
// run with. The routes and a batch's line checks (../batches/input.ts) both read it, so a batch
// line is parsed and bounded exactly as the same call made interactively. Pure.
import type { z } from 'zod';
import type { CatalogueEntry } from '../../core/catalogue/index.ts';
import { ENDPOINTS, type Endpoint } from '../../core/endpoints.ts';
import { embeddingsRequest } from '../schemas/embeddings.ts';
import { messagesRequest } from '../schemas/messages.ts';
import { chatCompletionRequest } from '../schemas/openai.ts';
import { responsesRequest } from '../schemas/responses.ts';
import { admitOutput, type OutputBound } from './text-door.ts';

/** Each endpoint's request body schema. */
export const ENDPOINT_REQUESTS: { readonly [E in Endpoint]: z.ZodType } = {
  '/v1/chat/completions': chatCompletionRequest,
  '/v1/responses': responsesRequest,
  '/v1/embeddings': embeddingsRequest,
  '/v1/messages': messagesRequest,
};

/**
 * The output bound of a call to `endpoint` (./text-door.ts admitOutput): the first of the
 * endpoint's output fields the body sets, else `fallback` (named by the last field).
 */
export function endpointOutput(
  endpoint: Endpoint,
  entry: CatalogueEntry,
  body: object,
  fallback: number,
): OutputBound {
  const fields: readonly string[] = ENDPOINTS[endpoint].output;
  if (fields.length === 0) throw new Error(`${endpoint} generates no output`);
  const b = body as Record<string, unknown>;
  // A loop, not find(): every text call passes here.
  let field = fields[fields.length - 1]!;
  for (const f of fields)
    if (b[f] != null) {
      field = f;
      break;
    }
  return admitOutput(entry, b[field] as number | null | undefined, field, fallback);
}
