// Request and response schemas of the chat-completions dialect. They validate requests (via the zod
// validator compiler in http/validation.ts) and are the source of /openapi.json, so the document
// cannot drift from what is enforced. The request's top level is closed (see chatCompletionRequest);
// messages and their parts are open: they are the chat template's to read.
import { z } from 'zod';
import { budgetRefusalFields } from './budget.ts';
import { optionalCostFields } from './cost.ts';

const nullish = <T extends z.ZodType>(t: T) => t.nullish();

export const modelId = z
  .string()
  .min(1)
  .max(256)
  .describe('A catalogue model id; case-insensitive, may contain /');

/**
 * An object whose other keys are forwarded to the engine as sent: a message and its parts reach
 * the model's chat template, which reads the keys it knows (reasoning_content, cache_control, …) —
 * the proxy cannot know them all, so it documents the usual ones and passes the rest through.
 */
const forwarded = <T extends z.core.$ZodLooseShape>(shape: T) =>
  z.looseObject(shape).describe('Other keys are forwarded to the engine as sent');

const cacheBreakpoint = nullish(z.looseObject({ mode: z.string() })).describe(
  'OpenAI prompt caching; forwarded (engines cache prefixes on their own)',
);

const PART_TYPES = ['text', 'image_url', 'input_audio', 'file', 'refusal', 'audio_url', 'video_url'] as const;

const contentPart = z.discriminatedUnion(
  'type',
  [
    forwarded({ type: z.literal('text'), text: z.string(), prompt_cache_breakpoint: cacheBreakpoint }),
    forwarded({
      type: z.literal('image_url'),
      image_url: forwarded({ url: z.string(), detail: z.string().optional() }),
      prompt_cache_breakpoint: cacheBreakpoint,
    }),
    forwarded({
      type: z.literal('input_audio'),
      input_audio: forwarded({ data: z.string(), format: z.string() }),
      prompt_cache_breakpoint: cacheBreakpoint,
    }),
    forwarded({
      type: z.literal('file'),
      file: forwarded({
        file_data: z.string().optional(),
        file_id: z.string().optional(),
        filename: z.string().optional(),
      }),
      prompt_cache_breakpoint: cacheBreakpoint,
    }),
    forwarded({ type: z.literal('refusal'), refusal: z.string() }),
    // vLLM's own, for audio and video models.
    forwarded({ type: z.literal('audio_url'), audio_url: forwarded({ url: z.string() }) }).describe('vLLM'),
    forwarded({ type: z.literal('video_url'), video_url: forwarded({ url: z.string() }) }).describe('vLLM'),
  ],
  {
    error: (iss) =>
      iss.code === 'invalid_union'
        ? `content part type ${JSON.stringify((iss.input as { type?: unknown } | undefined)?.type ?? null)} is not supported (supported: ${PART_TYPES.join(', ')})`
        : undefined,
  },
);

const toolCall = forwarded({
  id: z.string(),
  type: z.string(),
  function: forwarded({ name: z.string(), arguments: z.string() }).optional(),
});

export const chatMessage = forwarded({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(contentPart), z.null()]).optional(),
  name: z.string().optional(),
  tool_call_id: z.string().optional(),
  tool_calls: z.array(toolCall).optional(),
  function_call: nullish(forwarded({ name: z.string(), arguments: z.string() })).describe('Deprecated'),
  refusal: nullish(z.string()),
  audio: nullish(forwarded({ id: z.string() })),
  reasoning_content: nullish(z.string()).describe('An earlier answer’s reasoning (vLLM reasoning models)'),
});

const tool = forwarded({
  type: z.literal('function'),
  function: forwarded({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: nullish(z.boolean()),
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

const noEffect = (what: string) => `Accepted and forwarded; ${what}`;

/**
 * chat_template_kwargs (issue 24 item 5): only known template switches. vLLM passes the object to
 * the chat template renderer as keyword arguments, so `chat_template` inside it replaces the
 * model's template (GHSA-6fvq-23cw-5628: a Jinja template that never ends or fills memory) and
 * `tokenize` and friends change how the server renders (GHSA-69j4-grxj-j64p blocks vLLM's event
 * loop) — both engine-wide denial of service from one key, and a way around the refusal of a
 * top-level chat_template. Known switches only: Qwen3 and others read `enable_thinking`,
 * DeepSeek-V3.1 and Granite `thinking`, gpt-oss `reasoning_effort`.
 */
export const TEMPLATE_SWITCHES = ['enable_thinking', 'thinking', 'reasoning_effort'] as const;
const templateSwitches = z.strictObject({
  enable_thinking: nullish(z.boolean()),
  thinking: nullish(z.boolean()),
  reasoning_effort: nullish(z.enum(['low', 'medium', 'high'])),
});

/**
 * The chat-completions request. The top level is closed, as OpenAI's is: a parameter not listed
 * here is a 400 naming it, never forwarded — an engine would ignore it (vLLM drops unknown
 * fields with a log line), and a misspelt or other vendor's parameter would then do nothing
 * without anyone knowing. The list is generous: every parameter of OpenAI's API (those an engine
 * cannot honour say so) and vLLM's generation parameters, which are forwarded as sent. vLLM
 * parameters that steer the fleet rather than the answer (priority, request_id, chat_template,
 * kv_transfer_params, vllm_xargs, logits_processors, best_of and beam search, which would make
 * unbilled work) are refused.
 */
export const chatCompletionRequest = z
  .strictObject({
    model: modelId,
    messages: z.array(chatMessage).min(1).max(MAX_MESSAGES),
    stream: nullish(z.boolean()),
    stream_options: nullish(
      forwarded({
        include_usage: nullish(z.boolean()).describe('Send a usage frame before data: [DONE]'),
        continuous_usage_stats: nullish(z.boolean()).describe('vLLM: usage on every frame'),
        include_obfuscation: nullish(z.boolean()).describe(noEffect('no effect: frames are not padded')),
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
    tool_choice: nullish(z.union([z.string(), forwarded({ type: z.string() })])),
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
      forwarded({
        type: z.enum(['text', 'json_object', 'json_schema']),
        json_schema: forwarded({
          name: z.string(),
          description: z.string().optional(),
          schema: z.unknown().optional(),
          strict: nullish(z.boolean()),
        }).optional(),
      }),
    ),
    functions: nullish(z.array(forwarded({ name: z.string().min(1) }))).describe('Deprecated: use tools'),
    function_call: nullish(z.union([z.string(), forwarded({ name: z.string() })])).describe(
      'Deprecated: use tool_choice',
    ),
    reasoning_effort: nullish(z.string()).describe('minimal, low, medium or high, for models that reason'),
    verbosity: nullish(z.enum(['low', 'medium', 'high'])),
    modalities: nullish(z.array(z.string())).describe(noEffect('engines answer in text')),
    audio: nullish(z.looseObject({})).describe(noEffect('engines answer in text')),
    prediction: nullish(forwarded({ type: z.string() })).describe(noEffect('the engine decides')),
    metadata: nullish(z.record(z.string(), z.string())).describe(noEffect('completions are not stored')),
    store: nullish(z.boolean()).describe(noEffect('completions are not stored')),
    service_tier: nullish(z.string()).describe(noEffect('every call is served at one tier')),
    prompt_cache_key: nullish(z.string()).describe(noEffect('engines cache prefixes on their own')),
    prompt_cache_retention: nullish(z.string()).describe(noEffect('engines cache prefixes on their own')),
    prompt_cache_options: nullish(z.looseObject({})).describe(
      noEffect('engines cache prefixes on their own'),
    ),
    moderation: nullish(z.looseObject({})).describe(noEffect('no moderation runs here')),
    safety_identifier: nullish(z.string()),
    web_search_options: nullish(z.looseObject({})).describe(
      'Not offered to the model: engines do not search the web (header x-modelplane-tools-not-offered: web_search)',
    ),
    // vLLM's generation parameters.
    top_k: nullish(z.number().int().min(-1)).describe('vLLM'),
    min_p: nullish(z.number().min(0).max(1)).describe('vLLM'),
    repetition_penalty: nullish(z.number().positive()).describe('vLLM'),
    min_tokens: nullish(z.number().int().min(0).max(MAX_OUTPUT_TOKENS)).describe('vLLM; at most max_tokens'),
    ignore_eos: nullish(z.boolean()).describe('vLLM'),
    stop_token_ids: nullish(z.array(z.number().int())).describe('vLLM'),
    include_stop_str_in_output: nullish(z.boolean()).describe('vLLM'),
    skip_special_tokens: nullish(z.boolean()).describe('vLLM'),
    spaces_between_special_tokens: nullish(z.boolean()).describe('vLLM'),
    truncate_prompt_tokens: nullish(z.number().int().min(-1)).describe('vLLM'),
    prompt_logprobs: nullish(z.number().int().min(0)).describe('vLLM'),
    allowed_token_ids: nullish(z.array(z.number().int())).describe('vLLM'),
    bad_words: nullish(z.array(z.string())).describe('vLLM'),
    echo: nullish(z.boolean()).describe('vLLM: the answer starts with the last message'),
    add_generation_prompt: nullish(z.boolean()).describe('vLLM'),
    continue_final_message: nullish(z.boolean()).describe('vLLM: continue the final (assistant) message'),
    add_special_tokens: nullish(z.boolean()).describe('vLLM'),
    documents: nullish(z.array(z.record(z.string(), z.string()))).describe('vLLM, for RAG chat templates'),
    chat_template_kwargs: nullish(templateSwitches).describe(
      `vLLM: the chat template's switches, only these: ${TEMPLATE_SWITCHES.join(', ')}; any other key is refused`,
    ),
    mm_processor_kwargs: nullish(z.record(z.string(), z.unknown())).describe('vLLM'),
    structured_outputs: nullish(z.looseObject({})).describe('vLLM: json, regex, choice, grammar, …'),
    guided_json: nullish(z.union([z.string(), z.record(z.string(), z.unknown())])).describe('vLLM (older)'),
    guided_regex: nullish(z.string()).describe('vLLM (older)'),
    guided_choice: nullish(z.array(z.string())).describe('vLLM (older)'),
    guided_grammar: nullish(z.string()).describe('vLLM (older)'),
    guided_whitespace_pattern: nullish(z.string()).describe('vLLM (older)'),
    guided_decoding_backend: nullish(z.string()).describe('vLLM (older)'),
    structural_tag: nullish(z.string()).describe('vLLM'),
    include_reasoning: nullish(z.boolean()).describe('vLLM: return the reasoning (default true)'),
    thinking_token_budget: nullish(z.number().int().min(0)).describe(
      'vLLM: caps a reasoning model’s thinking',
    ),
    return_tokens_as_token_ids: nullish(z.boolean()).describe('vLLM'),
    return_token_ids: nullish(z.boolean()).describe('vLLM'),
    cache_salt: nullish(z.string()).describe('vLLM: prefix-cache isolation'),
  })
  .describe(
    'Parameters not listed are refused (400 naming them). A message and its content parts may carry ' +
      'other keys, forwarded to the engine as sent.',
  );
export type ChatCompletionRequest = z.infer<typeof chatCompletionRequest>;

export const usage = z.looseObject({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int().optional(),
  total_tokens: z.number().int(),
  prompt_tokens_details: nullish(z.looseObject({ cached_tokens: nullish(z.number().int()) })),
  ...optionalCostFields,
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
        message: z.looseObject({
          role: z.literal('assistant'),
          content: z.string().nullable(),
          // A client generated from /openapi.json must see a tool call (issue 25).
          tool_calls: z
            .array(
              z.looseObject({
                id: z.string(),
                type: z.literal('function'),
                function: z.looseObject({
                  name: z.string(),
                  arguments: z.string().describe('JSON text; cut short when finish_reason is length'),
                }),
              }),
            )
            .optional(),
          reasoning_content: z.string().nullish().describe('A reasoning model’s reasoning (vLLM)'),
        }),
        logprobs: z
          .looseObject({
            content: z
              .array(
                z.looseObject({
                  token: z.string(),
                  logprob: z.number(),
                  bytes: z.array(z.number().int()).nullable(),
                  top_logprobs: z.array(
                    z.looseObject({
                      token: z.string(),
                      logprob: z.number(),
                      bytes: z.array(z.number().int()).nullable(),
                    }),
                  ),
                }),
              )
              .nullable(),
          })
          .nullish()
          .describe('With logprobs: true, as the engine reports them'),
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
    ...budgetRefusalFields,
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
