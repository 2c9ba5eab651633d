// What the Messages dialect answers (its requests: ./messages.ts): the whole message, the events of
// its stream, count_tokens' answer and the error shape, as the routes declare them (the source of
// /openapi.json); the dialect's translators (../dialects/messages/) write the bytes.
import { z } from 'zod';
import { budgetRefusalFields } from './budget.ts';
import { optionalCostFields } from './cost.ts';

export const countTokensResponse = z.object({
  input_tokens: z.number().int().describe('Counted by the engine’s tokenizer where it has one'),
});

export const STOP_REASONS = [
  'end_turn',
  'max_tokens',
  'stop_sequence',
  'tool_use',
  'pause_turn',
  'refusal',
] as const;

export const messagesUsage = z.object({
  input_tokens: z.number().int().describe('Prompt tokens not read from the prefix cache'),
  output_tokens: z.number().int(),
  cache_creation_input_tokens: z.number().int().describe('Always 0: engines cache automatically'),
  cache_read_input_tokens: z.number().int().describe('Prompt tokens read from the prefix cache'),
  // On a whole message and the last message_delta of a stream (message_start does not know it yet).
  ...optionalCostFields,
});

const responseBlock = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({
    type: z.literal('tool_use'),
    id: z.string(),
    name: z.string(),
    input: z.record(z.string(), z.unknown()),
  }),
  z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }),
]);

export const messageResponse = z
  .object({
    id: z.string().describe('msg_ + 24 hex'),
    type: z.literal('message'),
    role: z.literal('assistant'),
    content: z.array(responseBlock),
    model: z.string().describe('The canonical model id'),
    stop_reason: z.enum(STOP_REASONS).nullable(),
    stop_sequence: z.string().nullable(),
    usage: messagesUsage,
  })
  .describe(
    'With stream: true the response is text/event-stream: message_start, then per content block ' +
      'content_block_start, content_block_delta…, content_block_stop, then message_delta (stop_reason, ' +
      'cumulative usage) and message_stop; ping while the engine is silent; a failure after the first ' +
      'event arrives as event: error.',
  );

const deltaEvents = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text_delta'), text: z.string() }),
  z.object({ type: z.literal('input_json_delta'), partial_json: z.string() }),
  z.object({ type: z.literal('thinking_delta'), thinking: z.string() }),
]);

/** One event of a Messages stream (`event: <type>` then `data: <this>`). */
export const messagesStreamEvent = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('message_start'), message: messageResponse }),
    z.object({
      type: z.literal('content_block_start'),
      index: z.number().int(),
      content_block: responseBlock,
    }),
    z.object({ type: z.literal('content_block_delta'), index: z.number().int(), delta: deltaEvents }),
    z.object({ type: z.literal('content_block_stop'), index: z.number().int() }),
    z.object({
      type: z.literal('message_delta'),
      delta: z.object({ stop_reason: z.enum(STOP_REASONS).nullable(), stop_sequence: z.string().nullable() }),
      usage: messagesUsage,
    }),
    z.object({ type: z.literal('message_stop') }),
    z.object({ type: z.literal('ping') }),
    z.object({
      type: z.literal('error'),
      error: z.object({ type: z.string(), message: z.string(), code: z.string() }),
      request_id: z.string(),
    }),
  ])
  .describe(
    'message_start, then per block content_block_start, content_block_delta…, content_block_stop, then ' +
      'message_delta and message_stop; ping when the engine is silent; error after a failure mid-stream.',
  );

export const messagesError = z.object({
  type: z.literal('error'),
  error: z.object({
    type: z.string().describe('authentication_error, permission_error, not_found_error, …'),
    message: z.string(),
    code: z.string().describe('The SPEC.md code, e.g. invalid_api_key'),
    ...budgetRefusalFields,
  }),
  request_id: z.string().describe('Equals the X-Request-Id and request-id headers'),
});

export const messagesErrors = {
  400: messagesError.describe('invalid_request_error: the message names the field. Nothing is charged.'),
  401: messagesError.describe('authentication_error (invalid_api_key)'),
  403: messagesError.describe('permission_error (billing_currency_unset)'),
  404: messagesError.describe('not_found_error (model_not_found)'),
  429: messagesError.describe('rate_limit_error (insufficient_quota: the balance, not a rate; do not retry)'),
  500: messagesError.describe('api_error; retry unless x-should-retry: false'),
};
