// Chat completion → Messages message, the direction an answer comes back from an engine. Pure; the
// streamed form of the same mapping is ./stream.ts.
import { newLongId } from '../../../core/ids.ts';
import type { CallCost, TextUsage } from '../../usage.ts';

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

export type OutBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'thinking'; thinking: string; signature: string };

export interface MessagesUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  /** What the call cost (../../usage.ts CallCost): on a whole message and the last message_delta. */
  cost?: string;
  currency?: string;
}

export interface MessageOut {
  id: string;
  type: 'message';
  role: 'assistant';
  content: OutBlock[];
  model: string;
  stop_reason: StopReason | null;
  stop_sequence: string | null;
  usage: MessagesUsage;
}

export const messageId = (): string => newLongId('msg');

/** Billed usage in this dialect: input excludes what was read from the prefix cache. */
export function messagesUsage(u: TextUsage, cost?: CallCost): MessagesUsage {
  const usage: MessagesUsage = {
    input_tokens: u.inputTokens - u.cachedTokens,
    output_tokens: u.outputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: u.cachedTokens,
  };
  if (cost !== undefined) {
    usage.cost = cost.cost;
    usage.currency = cost.currency;
  }
  return usage;
}

/**
 * finish_reason → stop_reason. `stop` is `stop_sequence` only when the engine names one of the
 * request's stop sequences (vLLM's `stop_reason`); an EOS token stop is `end_turn` — unless the
 * reply called tools: a call the request forced (a named tool_choice) finishes `stop`, not
 * `tool_calls`, in vLLM 0.32 as in OpenAI's API, and a Messages client runs tools on `tool_use`.
 */
export function stopReasonOf(
  finish: unknown,
  engineStop: unknown,
  stopSequences: readonly string[] | undefined,
  calledTools = false,
): { stop_reason: StopReason; stop_sequence: string | null } {
  if (finish === 'stop' && calledTools) return { stop_reason: 'tool_use', stop_sequence: null };
  switch (finish) {
    case 'length':
      return { stop_reason: 'max_tokens', stop_sequence: null };
    case 'tool_calls':
    case 'function_call':
      return { stop_reason: 'tool_use', stop_sequence: null };
    case 'content_filter':
      return { stop_reason: 'refusal', stop_sequence: null };
    default:
      if (typeof engineStop === 'string' && stopSequences?.includes(engineStop))
        return { stop_reason: 'stop_sequence', stop_sequence: engineStop };
      return { stop_reason: 'end_turn', stop_sequence: null };
  }
}

/**
 * Tool arguments as the input object. Arguments cut short by max_tokens are not JSON: the block
 * then carries `{}` (stop_reason max_tokens says why), as nothing callable can be made of them.
 */
export function toolInput(args: unknown): Record<string, unknown> {
  if (typeof args !== 'string' || args === '') return {};
  try {
    const v: unknown = JSON.parse(args);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

interface ChatChoice {
  message?: {
    content?: unknown;
    /** vLLM 0.32 names a reasoning model's reasoning `reasoning`; earlier versions `reasoning_content`. */
    reasoning?: unknown;
    reasoning_content?: unknown;
    tool_calls?: { id?: unknown; function?: { name?: unknown; arguments?: unknown } }[];
  };
  finish_reason?: unknown;
  stop_reason?: unknown;
}

export function toMessage(
  completion: { choices?: ChatChoice[] },
  o: {
    id: string;
    model: string;
    usage: TextUsage;
    cost?: CallCost;
    stopSequences?: readonly string[] | undefined;
  },
): MessageOut {
  const choice = completion.choices?.[0] ?? {};
  const msg = choice.message ?? {};
  const content: OutBlock[] = [];
  const reasoning = typeof msg.reasoning === 'string' ? msg.reasoning : msg.reasoning_content;
  if (typeof reasoning === 'string' && reasoning !== '')
    content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  if (typeof msg.content === 'string' && msg.content !== '')
    content.push({ type: 'text', text: msg.content });
  for (const call of Array.isArray(msg.tool_calls) ? msg.tool_calls : []) {
    content.push({
      type: 'tool_use',
      id: typeof call.id === 'string' ? call.id : newLongId('toolu'),
      name: typeof call.function?.name === 'string' ? call.function.name : '',
      input: toolInput(call.function?.arguments),
    });
  }
  return {
    id: o.id,
    type: 'message',
    role: 'assistant',
    content,
    model: o.model,
    ...stopReasonOf(
      choice.finish_reason,
      choice.stop_reason,
      o.stopSequences,
      content.some((b) => b.type === 'tool_use'),
    ),
    usage: messagesUsage(o.usage, o.cost),
  };
}
