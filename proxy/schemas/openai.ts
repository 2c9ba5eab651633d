// Request and response schemas of the chat-completions dialect. They validate requests (via the zod
// validator compiler in schemas/validation.ts) and are the source of /openapi.json, so the document
// cannot drift from what is enforced. Objects are loose: engine-specific parameters (vLLM's
// top_k, …) pass through untouched; only what the proxy relies on is checked.
import { z } from 'zod';

const nullish = <T extends z.ZodType>(t: T) => t.nullish();

export const modelId = z
  .string()
  .min(1)
  .max(256)
  .describe('A catalogue model id; case-insensitive, may contain /');

const contentPart = z.looseObject({ type: z.string().min(1) });

export const chatMessage = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(contentPart), z.null()]).optional(),
  name: z.string().optional(),
  tool_call_id: z.string().optional(),
  tool_calls: z.array(z.looseObject({ id: z.string(), type: z.string() })).optional(),
});

const tool = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});

/** Messages per request: far above any real conversation, far below what would stall the parser. */
export const MAX_MESSAGES = 10_000;

/**
 * Output tokens any request may ask for, whatever the model; the model's own bound (its
 * maxOutputTokens, else its context length) is checked by the route, which knows the model.
 */
export const MAX_OUTPUT_TOKENS = 1_000_000;

const outputTokens = () => z.number().int().min(1).max(MAX_OUTPUT_TOKENS);

export const FINISH_REASONS = ['stop', 'length', 'tool_calls', 'content_filter', 'function_call'] as const;

export const chatCompletionRequest = z
  .looseObject({
    model: modelId,
    messages: z.array(chatMessage).min(1).max(MAX_MESSAGES),
    stream: nullish(z.boolean()),
    stream_options: nullish(
      z.looseObject({
        include_usage: nullish(z.boolean()).describe('Send a usage frame before data: [DONE]'),
        continuous_usage_stats: nullish(z.boolean()).describe('vLLM: usage on every frame'),
      }),
    ),
    max_tokens: nullish(outputTokens()).describe(
      "Per choice; at most the model's output limit, and the prompt plus this must fit its context",
    ),
    max_completion_tokens: nullish(outputTokens()).describe('Takes precedence over max_tokens'),
    n: nullish(z.number().int().min(1).max(16)).describe('Choices, 1 to 16'),
    temperature: nullish(z.number().min(0).max(2)),
    top_p: nullish(z.number().min(0).max(1)),
    stop: nullish(z.union([z.string(), z.array(z.string()).max(4)])),
    tools: nullish(z.array(tool)),
    tool_choice: nullish(z.union([z.string(), z.looseObject({ type: z.string() })])),
    user: nullish(z.string()),
    // The rest of OpenAI's request, forwarded to the engine as sent (engines honour what they support).
    frequency_penalty: nullish(z.number().min(-2).max(2)),
    presence_penalty: nullish(z.number().min(-2).max(2)),
    logit_bias: nullish(z.record(z.string(), z.number().min(-100).max(100))),
    logprobs: nullish(z.boolean()),
    top_logprobs: nullish(z.number().int().min(0).max(20)),
    seed: nullish(z.number().int()),
    parallel_tool_calls: nullish(z.boolean()),
    response_format: nullish(
      z.looseObject({
        type: z.enum(['text', 'json_object', 'json_schema']),
        json_schema: z.looseObject({ name: z.string(), schema: z.unknown().optional() }).optional(),
      }),
    ),
    functions: nullish(z.array(z.looseObject({ name: z.string().min(1) }))).describe('Deprecated: use tools'),
    function_call: nullish(z.union([z.string(), z.looseObject({ name: z.string() })])).describe(
      'Deprecated: use tool_choice',
    ),
    reasoning_effort: nullish(z.string()).describe('minimal, low, medium or high, for models that reason'),
    verbosity: nullish(z.enum(['low', 'medium', 'high'])),
    modalities: nullish(z.array(z.string())),
    audio: nullish(z.looseObject({})),
    prediction: nullish(z.looseObject({ type: z.string() })),
    metadata: nullish(z.record(z.string(), z.string())),
    store: nullish(z.boolean()),
    service_tier: nullish(z.string()),
    prompt_cache_key: nullish(z.string()),
    prompt_cache_retention: nullish(z.string()),
    prompt_cache_options: nullish(z.looseObject({})),
    moderation: nullish(z.looseObject({})),
    safety_identifier: nullish(z.string()),
    web_search_options: nullish(z.looseObject({})),
    // vLLM's sampling extensions.
    top_k: nullish(z.number().int().min(-1)).describe('vLLM'),
    min_p: nullish(z.number().min(0).max(1)).describe('vLLM'),
    repetition_penalty: nullish(z.number().positive()).describe('vLLM'),
    min_tokens: nullish(z.number().int().min(0).max(MAX_OUTPUT_TOKENS)).describe('vLLM; at most max_tokens'),
    ignore_eos: nullish(z.boolean()).describe('vLLM'),
    chat_template_kwargs: nullish(z.record(z.string(), z.unknown())).describe(
      'vLLM, e.g. {"enable_thinking": true}',
    ),
  })
  .describe('Fields not listed are forwarded to the engine unchanged (engine-specific parameters).');
export type ChatCompletionRequest = z.infer<typeof chatCompletionRequest>;

export const usage = z.looseObject({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int().optional(),
  total_tokens: z.number().int(),
  prompt_tokens_details: nullish(z.looseObject({ cached_tokens: nullish(z.number().int()) })),
});

export const chatCompletion = z
  .looseObject({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: z.number().int(),
    model: z.string().describe('The canonical model id'),
    choices: z.array(
      z.looseObject({
        index: z.number().int(),
        message: z.looseObject({ role: z.literal('assistant'), content: z.string().nullable() }),
        finish_reason: z.enum(FINISH_REASONS).nullable(),
      }),
    ),
    usage: usage.optional(),
  })
  .describe(
    'With stream: true the response is text/event-stream: chat.completion.chunk frames, a usage frame when ' +
      'stream_options.include_usage is true, then data: [DONE]. A failure after the first frame arrives as an ' +
      'in-band frame data: {"error": {...}} with status 200.',
  );

/** One frame of a chat-completions stream (text/event-stream `data:` payload). */
export const chatCompletionChunk = z
  .looseObject({
    id: z.string(),
    object: z.literal('chat.completion.chunk'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.looseObject({
        index: z.number().int(),
        delta: z.looseObject({
          role: z.literal('assistant').optional(),
          content: z.string().nullish(),
          tool_calls: z.array(z.looseObject({ index: z.number().int() })).optional(),
        }),
        finish_reason: z.enum(FINISH_REASONS).nullable(),
      }),
    ),
    usage: usage.nullish(),
  })
  .describe(
    'Frames are data: {chat.completion.chunk}; with include_usage a frame with empty choices and usage ' +
      'precedes the terminator data: [DONE]. A failure after the first frame is data: {"error": {...}}.',
  );

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
  usage: z.looseObject({ prompt_tokens: z.number().int(), total_tokens: z.number().int() }),
});

export const modelEntry = z.object({
  id: z.string().describe('Canonical spelling; may contain /'),
  object: z.literal('model'),
  created: z.number().int(),
  owned_by: z.string(),
  region: z.string(),
  tags: z.array(z.string()),
});
export type ModelEntry = z.infer<typeof modelEntry>;

export const modelList = z.object({ object: z.literal('list'), data: z.array(modelEntry) });

export const modelParams = z.object({
  '*': z.string().min(1).describe('The model id, / unencoded (e.g. /v1/models/meta-llama/Llama-3.1-8B)'),
});

export const errorResponse = z.object({
  error: z.object({
    message: z.string(),
    type: z.string(),
    param: z.string().nullable(),
    code: z.string(),
  }),
});

/** Error responses every authenticated route can give, for the API reference. */
export const commonErrors = {
  400: errorResponse.describe('Bad input; the message and param name the field. Nothing is charged.'),
  401: errorResponse.describe('invalid_api_key: wrong, rotated, deleted or whitespace-carrying key'),
  403: errorResponse.describe('billing_currency_unset: set the country in the profile'),
  404: errorResponse.describe('model_not_found'),
  429: errorResponse.describe('insufficient_quota: credit balance too low (not a rate limit)'),
  500: errorResponse.describe('server_error; retry unless the response carries x-should-retry: false'),
};

/** A route that reads only multipart/form-data answers any other body with this. */
export const multipartOnly = {
  415: errorResponse.describe('unsupported_media_type: the body must be multipart/form-data'),
};
