// Request and response schemas of POST /v1/responses (OpenAI's Responses API) on the
// chat-completions surface. They validate requests and are the source of /openapi.json. The top
// level is closed as chat completions' is: an unknown parameter is a 400 naming it. Items and parts
// are closed too — the translation (../dialects/responses/request.ts) must understand every key, as
// nothing is forwarded to the engine as sent. Tool types no engine here can be offered (hosted
// ones such as web search, and OpenAI's trained-in formats) are left out (HOSTED_TOOL_TYPES).
import { z } from 'zod';
import { paramPath, telling } from '../../http/validation.ts';
import { optionalCostFields } from './cost.ts';
import { MAX_MESSAGES, MAX_OUTPUT_TOKENS, modelId } from './openai.ts';
import { toolChoice, tools } from './responses-tools.ts';

export type {
  ResponsesCustomTool,
  ResponsesFunctionTool,
  ResponsesHostedTool,
  ResponsesNamespaceTool,
  ResponsesTool,
} from './responses-tools.ts';

const nullish = <T extends z.ZodType>(t: T) => t.nullish();

function unknownType(iss: { code: string; input?: unknown }, what: string, known: readonly string[]) {
  if (iss.code !== 'invalid_union') return undefined;
  const got = (iss.input as { type?: unknown } | undefined)?.type;
  return `${what} ${JSON.stringify(got ?? null)} is not supported here (supported: ${known.join(', ')})`;
}

/** A field this surface cannot act on: null (what the SDKs send for "unset") or left out, else a 400 saying why. */
const nullOnly = (why: string) => z.null({ error: why }).optional();

const inputText = z.strictObject({ type: z.literal('input_text'), text: z.string() });
const inputImage = z.strictObject({
  type: z.literal('input_image'),
  image_url: nullish(z.string().min(1)),
  file_id: z
    .null()
    .optional()
    .describe('null only: uploaded files are not kept by this surface; send image_url'),
  detail: nullish(z.enum(['low', 'high', 'auto', 'original'])),
});
const outputText = z.strictObject({
  type: z.literal('output_text'),
  text: z.string(),
  annotations: z.array(z.unknown()).max(0).optional().describe('empty only'),
  logprobs: z.array(z.unknown()).optional().describe('Accepted; not sent to the engine'),
  // The openai SDKs' parse helpers add it to the output they return; passed back, it is the text.
  parsed: z
    .unknown()
    .optional()
    .describe('Accepted (added by the SDKs’ parse helpers); the text is what is sent'),
});
const refusal = z.strictObject({ type: z.literal('refusal'), refusal: z.string() });

const PART_TYPES = ['input_text', 'input_image', 'output_text', 'refusal'] as const;
/** Why a part OpenAI defines is not served here, by its type. */
const UNSERVED_PARTS: Record<string, string> = {
  input_file: 'files are not read by this surface; send their text as input_text',
  input_audio: 'audio is not read by this surface',
};
const contentPart = z.discriminatedUnion('type', [inputText, inputImage, outputText, refusal], {
  error: (iss) => {
    const got = (iss.input as { type?: unknown } | undefined)?.type;
    if (typeof got === 'string' && UNSERVED_PARTS[got] !== undefined)
      return `content part type ${JSON.stringify(got)} is not supported here: ${UNSERVED_PARTS[got]}`;
    return unknownType(iss, 'content part type', PART_TYPES);
  },
});
export type ResponsesPart = z.infer<typeof contentPart>;

const messageItem = z.strictObject({
  type: z.literal('message').optional(),
  id: z.string().optional(),
  status: z.string().optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer'], {
    error: (iss) =>
      `unknown role ${JSON.stringify(iss.input)}: roles are user, assistant, system and developer`,
  }),
  content: z.union([z.string(), z.array(contentPart)]),
  phase: nullish(z.enum(['commentary', 'final_answer'])).describe(
    "An assistant message's label (commentary or the final answer); accepted, not sent to the engine",
  ),
});

export type ResponsesMessage = z.infer<typeof messageItem>;

const functionCallItem = z.strictObject({
  type: z.literal('function_call'),
  id: z.string().optional(),
  call_id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
  status: z.string().optional(),
  namespace: z.string().optional(),
  // The openai SDKs' stream and parse helpers add it to the calls they return; passed back, the
  // arguments string is what is sent.
  parsed_arguments: z
    .unknown()
    .optional()
    .describe('Accepted (added by the SDKs’ helpers); arguments is what is sent'),
});

const functionCallOutputItem = z.strictObject({
  type: z.literal('function_call_output'),
  id: nullish(z.string()),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(z.union([inputText, outputText]))]),
  status: nullish(z.string()),
});

const reasoningItem = z.strictObject({
  type: z.literal('reasoning'),
  id: z.string().optional(),
  summary: z.array(z.strictObject({ type: z.literal('summary_text'), text: z.string() })),
  content: nullish(z.array(z.strictObject({ type: z.literal('reasoning_text'), text: z.string() }))),
  encrypted_content: nullish(z.string()),
  status: nullish(z.string()),
});

/** A call of a custom tool (freeform text input), as ../dialects/responses/response.ts gives it. */
const customToolCallItem = z.strictObject({
  type: z.literal('custom_tool_call'),
  id: z.string().optional(),
  call_id: z.string().min(1),
  name: z.string().min(1),
  input: z.string(),
  namespace: z.string().optional(),
  status: nullish(z.string()),
  caller: nullish(z.looseObject({ type: z.string() })).describe('Accepted without effect'),
});

const customToolCallOutputItem = z.strictObject({
  type: z.literal('custom_tool_call_output'),
  id: nullish(z.string()),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(z.union([inputText, outputText]))]),
  status: nullish(z.string()),
  caller: nullish(z.looseObject({ type: z.string() })).describe('Accepted without effect'),
});

const ITEM_TYPES = [
  'message',
  'function_call',
  'function_call_output',
  'custom_tool_call',
  'custom_tool_call_output',
  'reasoning',
  'additional_tools',
] as const;

/** Why an item OpenAI defines is not served here, by its type. */
const UNSERVED_ITEMS: Record<string, string> = {
  item_reference:
    'items are not looked up by id here; send the item itself, or chain with previous_response_id',
};

/** The message of a failed input item: what failed inside a message, else the item's type. */
function itemError(iss: { code: string; input?: unknown }): string | undefined {
  const input = iss.input as { type?: unknown; role?: unknown } | undefined;
  const got = input?.type;
  if (typeof got === 'string' && UNSERVED_ITEMS[got] !== undefined)
    return `input item type ${JSON.stringify(got)} is not supported here: ${UNSERVED_ITEMS[got]}`;
  // A message sent without `type` (EasyInputMessage) failed inside (a part it holds): say what, not
  // "input item type null".
  if ((got === undefined || got === 'message') && input?.role !== undefined) {
    const parsed = messageItem.safeParse(input);
    if (!parsed.success && parsed.error.issues[0] !== undefined) {
      const inner = telling(parsed.error.issues[0]);
      return `${paramPath(inner.path) || 'the message'}: ${inner.message}`;
    }
  }
  return unknownType(iss, 'input item type', ITEM_TYPES);
}

/**
 * A message without `type` is a message (OpenAI's EasyInputMessage); any other item is typed.
 * additional_tools (tools made available from this item on; Codex CLI sends its tools so) is
 * declared below, after the tools.
 */
const turnItem = z.union(
  [
    messageItem,
    functionCallItem,
    functionCallOutputItem,
    customToolCallItem,
    customToolCallOutputItem,
    reasoningItem,
  ],
  { error: itemError },
);

const additionalToolsItem = z.strictObject({
  type: z.literal('additional_tools'),
  id: nullish(z.string()),
  role: z.literal('developer'),
  tools,
});

const inputItem = z.union([turnItem, additionalToolsItem], { error: itemError });
export type ResponsesItem = z.infer<typeof inputItem>;

const textFormat = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('text') }),
    z.strictObject({ type: z.literal('json_object') }),
    z.strictObject({
      type: z.literal('json_schema'),
      name: z.string().min(1).max(64),
      schema: z.record(z.string(), z.unknown()),
      description: nullish(z.string()),
      strict: nullish(z.boolean()),
    }),
  ],
  { error: (iss) => unknownType(iss, 'text.format type', ['text', 'json_object', 'json_schema']) },
);

export const INCLUDE_ACCEPTED = ['reasoning.encrypted_content', 'message.output_text.logprobs'] as const;

export const responsesRequest = z.strictObject({
  model: modelId,
  input: z.union([z.string(), z.array(inputItem).min(1).max(MAX_MESSAGES)]),
  instructions: nullish(z.string()),
  stream: nullish(z.boolean()),
  stream_options: nullish(
    z.strictObject({
      include_obfuscation: nullish(z.boolean()).describe('Accepted; frames are not padded'),
    }),
  ),
  store: nullish(z.boolean()).describe(
    'Default true: the response is kept 30 days for GET and previous_response_id',
  ),
  previous_response_id: nullish(z.string().min(1)),
  tools: nullish(tools),
  tool_choice: nullish(toolChoice),
  parallel_tool_calls: nullish(z.boolean()),
  max_output_tokens: nullish(z.number().int().min(1).max(MAX_OUTPUT_TOKENS)).describe(
    "At most the model's output limit, and the prompt plus this must fit its context",
  ),
  temperature: nullish(z.number().min(0).max(2)),
  top_p: nullish(z.number().min(0).max(1)),
  text: nullish(
    z.strictObject({
      format: nullish(textFormat),
      verbosity: nullish(z.enum(['low', 'medium', 'high'])).describe('Accepted without effect: a hint'),
    }),
  ),
  reasoning: nullish(
    z.strictObject({
      effort: nullish(z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'])).describe(
        "A reasoning model's reasoning_effort; a hint elsewhere",
      ),
      summary: nullish(z.enum(['auto', 'concise', 'detailed'])).describe(
        'The engine’s reasoning comes back in full as reasoning_text, and when a summary is asked for, the same text as the summary (no summarizer runs)',
      ),
      generate_summary: nullish(z.enum(['auto', 'concise', 'detailed'])).describe('Deprecated: summary'),
      context: nullish(z.enum(['auto', 'current_turn', 'all_turns'])).describe(
        'Accepted without effect: earlier turns’ reasoning is not sent to engines (chat templates drop it)',
      ),
    }),
  ),
  metadata: nullish(z.record(z.string().max(64), z.string().max(512))).describe('Echoed and stored'),
  user: nullish(z.string()).describe('Sent to the engine as chat’s user'),
  safety_identifier: nullish(z.string()).describe('Sent to the engine as chat’s user'),
  prompt_cache_key: nullish(z.string().max(1024)).describe(
    'Calls with equal keys go to the engine that holds their prefix',
  ),
  include: nullish(z.array(z.enum(INCLUDE_ACCEPTED))).describe(
    'Accepted; no encrypted reasoning is made here, logprobs are not returned',
  ),
  truncation: nullish(z.literal('disabled')).describe('disabled only: the input is never cut'),
  service_tier: nullish(z.string()).describe('Accepted; every call is served at one tier'),
  background: nullish(z.boolean()).describe(
    'Run as a job: the answer is the queued response; GET polls it, POST …/cancel cancels it, GET ?stream=true replays its events. Needs store',
  ),
  prompt_cache_retention: nullish(z.enum(['in_memory', '24h'])).describe(
    'Accepted; engines keep their prefix cache by their own policy',
  ),
  client_metadata: nullish(z.record(z.string(), z.string())).describe(
    'Sent by Codex CLI (its session and turn ids); accepted without effect',
  ),
  max_tool_calls: nullish(z.number().int().min(1)).describe(
    'Accepted without effect: it bounds calls of built-in tools, and none run here',
  ),
  // OpenAI's fields this surface cannot act on: null is "unset" (the SDKs send it so), a value is a
  // 400 that says why.
  prompt: nullOnly(
    'reusable prompts are not stored here: send the text as instructions and input, or send null',
  ),
  conversation: nullOnly(
    'conversations are not stored here: chain turns with previous_response_id, or send null',
  ),
  context_management: nullOnly('server-side compaction is not run here: send null or leave it out'),
  moderation: nullOnly('moderated completions are not run here: send null or leave it out'),
});
export type ResponsesRequest = z.infer<typeof responsesRequest>;

const usage = z.object({
  input_tokens: z.number().int(),
  input_tokens_details: z.object({ cached_tokens: z.number().int(), cache_write_tokens: z.number().int() }),
  output_tokens: z.number().int(),
  output_tokens_details: z.object({ reasoning_tokens: z.number().int() }),
  total_tokens: z.number().int(),
  // On a finished response (response.completed, response.incomplete, a whole response, GET).
  ...optionalCostFields,
});

/** The response object (non-streamed body, GET, and inside response.* stream events). */
export const responseObject = z.looseObject({
  id: z.string().describe('resp_…'),
  object: z.literal('response'),
  created_at: z.number().int(),
  status: z.enum(['queued', 'in_progress', 'completed', 'incomplete', 'failed', 'cancelled']),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  incomplete_details: z.object({ reason: z.literal('max_output_tokens') }).nullable(),
  model: z.string(),
  output: z.array(
    z.looseObject({
      type: z.enum(['message', 'function_call', 'custom_tool_call', 'reasoning']),
      id: z.string(),
    }),
  ),
  usage: usage.optional().describe('Absent until the response ends'),
});

export const responseStreamEvent = z
  .looseObject({ type: z.string(), sequence_number: z.number().int() })
  .describe(
    'event: <type> then data: {"type": …, "sequence_number": n, …}; response.created, response.in_progress, response.output_item.added/.done, response.content_part.added/.done, response.output_text.delta/.done, response.function_call_arguments.delta/.done, response.custom_tool_call_input.delta/.done, response.reasoning_text.delta/.done, then response.completed, response.incomplete or response.failed',
  );

export const deletedResponse = z.object({
  id: z.string(),
  object: z.literal('response'),
  deleted: z.literal(true),
});

const includable = z.enum([...INCLUDE_ACCEPTED, 'message.input_image.image_url']);
const includeList = z
  .union([includable, z.array(includable)])
  .optional()
  .describe('Accepted: the listed items carry what they were sent with');

export const inputItemsQuery = z.object({
  after: z.string().max(128).optional().describe('An item id: the page starts after it'),
  limit: z.coerce.number().int().min(1).max(100).optional().describe('1 to 100, default 20'),
  order: z.enum(['asc', 'desc']).optional().describe('Default desc (the last input first)'),
  include: includeList,
  // The openai SDKs send an array as include[]=…
  'include[]': includeList,
});

export const inputItemList = z.object({
  object: z.literal('list'),
  data: z.array(z.looseObject({ id: z.string(), type: z.string() })),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
  has_more: z.boolean(),
});

export const retrieveQuery = z.object({
  stream: z.enum(['true', 'false']).optional().describe('true: replay a background response’s events'),
  starting_after: z.coerce
    .number()
    .int()
    .min(-1)
    .optional()
    .describe('The sequence number the replay starts after'),
  include: includeList,
  'include[]': includeList,
  include_obfuscation: z.enum(['true', 'false']).optional().describe('Accepted; frames are not padded'),
});
