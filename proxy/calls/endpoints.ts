// The proxy's half of the endpoint table (core/endpoints.ts, whose paths key it, so the compiler
// holds the two halves together): each endpoint's request schema. The routes validate with it and
// a batch's line checks (../batches/input.ts) parse with it, so a batch line is read exactly as the
// same call made interactively; its output bound is the table's too (./text-door.ts admitOutput).
import type { z } from 'zod';
import type { Endpoint } from '../../core/endpoints.ts';
import { embeddingsRequest } from '../schemas/embeddings.ts';
import { messagesRequest } from '../schemas/messages.ts';
import { chatCompletionRequest } from '../schemas/openai.ts';
import { responsesRequest } from '../schemas/responses.ts';

/** Each endpoint's request body schema. */
export const ENDPOINT_REQUESTS: { readonly [E in Endpoint]: z.ZodType } = {
  '/v1/chat/completions': chatCompletionRequest,
  '/v1/responses': responsesRequest,
  '/v1/embeddings': embeddingsRequest,
  '/v1/messages': messagesRequest,
};
