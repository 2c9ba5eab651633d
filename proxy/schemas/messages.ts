// Request schemas of the Messages dialect (POST /v1/messages, /v1/messages/count_tokens; what it
// answers: ./messages-response.ts). They validate requests and are the source of /openapi.json. Every object is strict: SPEC.md says
// nothing this surface cannot carry is ever dropped silently, so an unknown parameter (at the top or
// inside a block, a tool, a choice), block type, role or a server-side tool is a 400 naming it. A
// documented Anthropic field is listed here only when it is carried, or has no effect on the answer
// (docs/api.md "The Messages dialect": "Carried with a change"); the rest are refused like unknown ones.
import { z } from 'zod';
import { MAX_MESSAGES, MAX_OUTPUT_TOKENS, modelId } from './openai.ts';

const cacheControl = z
  .strictObject({
    type: z.literal('ephemeral'),
    ttl: z
      .enum(['5m', '1h'])
      .optional()
      .describe('Accepted; the engine keeps its prefix cache by its own policy'),
  })
  .nullish()
  .describe('A prompt-cache breakpoint: the prompt up to here is routed to the engine that already holds it');

const textBlock = z.strictObject({
  type: z.literal('text'),
  text: z.string(),
  cache_control: cacheControl,
  // Citations point into document and search-result blocks, which this surface refuses: a non-empty
  // list can only come from another service's conversation, and its meaning would be lost.
  citations: z
    .array(z.unknown())
    .max(0, { error: 'citations refer to document or search_result blocks, which are not supported here' })
    .nullish()
    .describe('null or empty only: citations refer to document and search_result blocks, not supported here'),
});

const imageSource = z.discriminatedUnion(
  'type',
  [
    z.strictObject({
      type: z.literal('base64'),
      media_type: z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']),
      data: z.string().min(1),
    }),
    z.strictObject({ type: z.literal('url'), url: z.string().url() }),
  ],
  { error: (iss) => unknownType(iss, 'image source type', ['base64', 'url']) },
);

const imageBlock = z.strictObject({
  type: z.literal('image'),
  source: imageSource,
  cache_control: cacheControl,
});

const toolUseBlock = z.strictObject({
  type: z.literal('tool_use'),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
  cache_control: cacheControl,
  // Echoed back from Anthropic's own answers: a direct call is what every call here is; a call made
  // by a server-side tool (code execution) cannot be carried.
  caller: z
    .strictObject({ type: z.literal('direct', { error: callerError }) })
    .optional()
    .describe('Only {"type": "direct"}: calls made by server-side tools are not supported here'),
  toolset_name: z.null().optional().describe('Only null: server-side toolsets are not supported here'),
});

const toolResultContent = z.discriminatedUnion('type', [textBlock, imageBlock], {
  error: (iss) => unknownType(iss, 'tool_result content block type', ['text', 'image']),
});

const toolResultBlock = z.strictObject({
  type: z.literal('tool_result'),
  tool_use_id: z.string().min(1),
  content: z.union([z.string(), z.array(toolResultContent)]).optional(),
  is_error: z.boolean().optional(),
  cache_control: cacheControl,
  toolset_name: z.null().optional().describe('Only null: server-side toolsets are not supported here'),
});

const thinkingBlock = z.strictObject({
  type: z.literal('thinking'),
  thinking: z.string(),
  signature: z.string().optional(),
});

const redactedThinkingBlock = z.strictObject({ type: z.literal('redacted_thinking'), data: z.string() });

export const BLOCK_TYPES = [
  'text',
  'image',
  'tool_use',
  'tool_result',
  'thinking',
  'redacted_thinking',
] as const;

const contentBlock = z.discriminatedUnion(
  'type',
  [textBlock, imageBlock, toolUseBlock, toolResultBlock, thinkingBlock, redactedThinkingBlock],
  { error: (iss) => unknownType(iss, 'content block type', BLOCK_TYPES) },
);
export type ContentBlock = z.infer<typeof contentBlock>;

export const messageParam = z.strictObject({
  // The current Messages API also has a `system` turn inside messages (Claude Code sends one):
  // it becomes a chat system message in its place (text only, checked in the translation).
  role: z.enum(['user', 'assistant', 'system'], {
    error: (iss) => `unknown role ${JSON.stringify(iss.input)}: roles are user, assistant and system`,
  }),
  content: z.union([z.string(), z.array(contentBlock)]),
});
export type MessageParam = z.infer<typeof messageParam>;

/**
 * A custom tool. A typed (server-side) tool is refused by name: it would run on Anthropic's
 * servers. The type is checked first, so a server-side tool's own fields (max_uses, …) are not
 * what the 400 names.
 */
const tool = z
  .strictObject({
    type: z
      .string()
      .nullish()
      .refine((t) => t === undefined || t === null || t === 'custom', {
        error: (iss) =>
          `server-side tool ${JSON.stringify(iss.input)} is not supported here; only custom tools (name, input_schema) are`,
      })
      .describe('"custom" or absent; any other type is a server-side tool (400)'),
    name: z.string().min(1).max(128),
    description: z.string().optional(),
    input_schema: z.record(z.string(), z.unknown()).optional(),
    cache_control: cacheControl,
    strict: z.boolean().optional().describe('Sent to the engine as the function’s strict'),
    input_examples: z
      .array(z.record(z.string(), z.unknown()))
      .optional()
      .describe('Appended to the description the engine reads, as JSON lines'),
    eager_input_streaming: z
      .boolean()
      .nullish()
      .describe('Accepted; tool input always streams as the engine generates it'),
    defer_loading: z
      .literal(false, {
        error: 'defer_loading needs the server-side tool search tool, which is not supported here',
      })
      .optional()
      .describe('false only: deferred loading needs the server-side tool search tool'),
    allowed_callers: z
      .array(z.literal('direct', { error: callerError }))
      .optional()
      .describe('["direct"] only: calls from server-side code execution are not supported here'),
  })
  .superRefine((t, ctx) => {
    if ((t.type === undefined || t.type === null || t.type === 'custom') && t.input_schema === undefined)
      ctx.addIssue({ code: 'custom', path: ['input_schema'], message: 'a custom tool needs input_schema' });
  });
export type ToolParam = z.infer<typeof tool>;

const toolChoice = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
    z.strictObject({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
    z.strictObject({
      type: z.literal('tool'),
      name: z.string().min(1),
      disable_parallel_tool_use: z.boolean().optional(),
    }),
    z.strictObject({ type: z.literal('none') }),
  ],
  { error: (iss) => unknownType(iss, 'tool_choice type', ['auto', 'any', 'tool', 'none']) },
);
export type ToolChoiceParam = z.infer<typeof toolChoice>;

const thinkingDisplay = z
  .literal('summarized', {
    error: 'display "omitted" is not supported here: the engine’s reasoning is returned as it is',
  })
  .nullish()
  .describe('"summarized" or absent: the engine’s reasoning comes back in full');

const thinkingConfig = z.discriminatedUnion(
  'type',
  [
    z.strictObject({
      type: z.literal('enabled'),
      budget_tokens: z
        .number()
        .int()
        .min(1)
        .max(1_000_000)
        .describe('Sent to the engine as vLLM’s thinking_token_budget'),
      display: thinkingDisplay,
    }),
    z.strictObject({ type: z.literal('adaptive'), display: thinkingDisplay }),
    z.strictObject({ type: z.literal('disabled') }),
  ],
  { error: (iss) => unknownType(iss, 'thinking type', ['enabled', 'adaptive', 'disabled']) },
);

/**
 * context_management (Anthropic's context-editing beta). clear_thinking_20251015 asks for earlier
 * turns' thinking to be left out of the prompt: the translation always leaves it out (see
 * ../dialects/messages/request.ts), so it is carried whatever its `keep`. The other edits
 * (clearing tool results, compaction) would change the prompt in ways this surface does not do:
 * refused by name rather than ignored.
 */
const contextEdit = z.discriminatedUnion(
  'type',
  [
    z.strictObject({
      type: z.literal('clear_thinking_20251015'),
      keep: z
        .union([
          z.literal('all'),
          z.strictObject({ type: z.literal('thinking_turns'), value: z.number().int().min(0) }),
          z.strictObject({ type: z.literal('all') }),
        ])
        .optional(),
    }),
  ],
  { error: (iss) => unknownType(iss, 'context_management edit', ['clear_thinking_20251015']) },
);
const contextManagement = z
  .strictObject({ edits: z.array(contextEdit).max(16).optional() })
  .nullish()
  .describe('clear_thinking_20251015 only: earlier turns’ thinking is never sent to the engine anyway');

/** output_config: effort for reasoning models (vLLM's reasoning_effort), format as response_format. */
const outputConfig = z
  .strictObject({
    effort: z
      .enum(['low', 'medium', 'high', 'xhigh', 'max'])
      .nullish()
      .describe('Sent to a reasoning model as reasoning_effort (xhigh and max as high); advisory elsewhere'),
    format: z
      .strictObject({ type: z.literal('json_schema'), schema: z.record(z.string(), z.unknown()) })
      .nullish()
      .describe('Sent to the engine as response_format json_schema (structured output)'),
  })
  .optional();

/** Fields of a count_tokens request: the create request without max_tokens and stream. */
const promptFields = {
  model: modelId,
  messages: z.array(messageParam).min(1).max(MAX_MESSAGES),
  system: z.union([z.string(), z.array(textBlock)]).optional(),
  tools: z.array(tool).max(512).optional(),
  tool_choice: toolChoice.optional(),
  thinking: thinkingConfig.optional(),
  context_management: contextManagement,
  output_config: outputConfig,
};

export const messagesRequest = z.strictObject({
  ...promptFields,
  cache_control: cacheControl.describe('Automatic caching: the whole prompt is a breakpoint'),
  max_tokens: z
    .number()
    .int()
    .min(1)
    .max(MAX_OUTPUT_TOKENS)
    .describe("At most the model's output limit, and the prompt plus this must fit its context"),
  stream: z.boolean().optional(),
  stop_sequences: z.array(z.string().min(1)).max(16).optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).max(1_000_000).optional(),
  metadata: z.strictObject({ user_id: z.string().max(256).nullish() }).optional(),
  service_tier: z
    .enum(['auto', 'standard_only'])
    .optional()
    .describe('Accepted; every call is served at the standard tier'),
  // The current SDK's other request fields (docs/api.md "The Messages dialect": "Today's Messages
  // API"): the standard speed is the only one served, so "fast" is refused rather than ignored;
  // diagnostics only ask for a report about Anthropic's prompt cache, which engines here do not
  // give.
  speed: z
    .literal('standard', { error: 'speed "fast" is not served here: every call runs at the standard speed' })
    .nullish()
    .describe('"standard" or null only: one speed is served'),
  diagnostics: z
    .strictObject({ previous_message_id: z.string().nullish() })
    .nullish()
    .describe('Accepted without effect: no cache-miss report is made here'),
});
export type MessagesRequest = z.infer<typeof messagesRequest>;

export const countTokensRequest = z.strictObject({ ...promptFields, cache_control: cacheControl });
export type CountTokensRequest = z.infer<typeof countTokensRequest>;

function callerError(iss: { input?: unknown }): string {
  return `caller ${JSON.stringify(iss.input)} is a server-side tool (code execution), which is not supported here`;
}

function unknownType(iss: { code: string; input?: unknown }, what: string, known: readonly string[]) {
  if (iss.code !== 'invalid_union') return undefined;
  const got = (iss.input as { type?: unknown } | undefined)?.type;
  return `${what} ${JSON.stringify(got ?? null)} is not supported here (supported: ${known.join(', ')})`;
}
