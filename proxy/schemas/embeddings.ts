// Request and response schemas of POST /v1/embeddings (the OpenAI dialect's; chat completions:
// ./openai.ts). They validate requests (http/validation.ts) and are the source of /openapi.json.
import { z } from 'zod';
import { costFields } from './cost.ts';
import { modelId } from './openai.ts';

/** Inputs per embeddings request, as OpenAI allows. */
export const MAX_EMBEDDING_INPUTS = 2048;
/** The largest token id (vocabularies are far smaller; the catalogue does not know each one's size). */
export const MAX_TOKEN_ID = 2 ** 31 - 1;
/**
 * `dimensions` any request may ask for: the catalogue does not know each model's width, and the
 * widest embedding models are 4096 wide; the engine refuses more than its model has.
 */
export const MAX_EMBEDDING_DIMENSIONS = 8192;

const tokenIds = z.array(z.number().int().min(0).max(MAX_TOKEN_ID)).min(1);

export const embeddingsRequest = z.looseObject({
  model: modelId,
  input: z
    .union([
      z.string().min(1),
      z.array(z.string().min(1)).min(1).max(MAX_EMBEDDING_INPUTS),
      tokenIds,
      z.array(tokenIds).min(1).max(MAX_EMBEDDING_INPUTS),
    ])
    .describe(
      `Text, up to ${MAX_EMBEDDING_INPUTS} texts, token ids, or up to ${MAX_EMBEDDING_INPUTS} arrays of token ids; ` +
        "each input at most the model's context length in tokens",
    ),
  encoding_format: z
    .enum(['float', 'base64'])
    .optional()
    .describe('base64 is the little-endian float32 bytes of the vector'),
  dimensions: z
    .number()
    .int()
    .min(1)
    .max(MAX_EMBEDDING_DIMENSIONS)
    .optional()
    .describe("At most the model's own width"),
  user: z.string().optional(),
});
export type EmbeddingsRequest = z.infer<typeof embeddingsRequest>;

export const embeddingsResponse = z.looseObject({
  object: z.literal('list'),
  data: z.array(
    z.looseObject({
      object: z.literal('embedding'),
      index: z.number().int(),
      embedding: z.union([z.array(z.number()), z.string()]),
    }),
  ),
  model: z.string(),
  usage: z.looseObject({ prompt_tokens: z.number().int(), total_tokens: z.number().int(), ...costFields }),
});
