// The client's body for a non-streaming chat completion, and its usage. The engine's bytes are
// sent as they are when they already name the canonical model (or with only the model field
// swapped), so the usual answer is neither parsed whole nor serialized again: the profile put the
// engine answer's JSON.parse at ~2.5 % of the proxy's CPU. Answers in another shape take the
// parse-and-serialize way, which gives the same JSON.
import type { CallCost } from '../../billing/call-cost.ts';
import type { TextUsage } from '../../billing/text-quote.ts';
import { engineModelKey, lastUsage, type ModelFields } from './chunks.ts';

export interface CompletionOut {
  /** What the client receives. */
  body: Buffer | string;
  /** The answer's usage object (null when it has none). */
  usage: unknown;
  /** Fast path: where in `body` the usage object's closing brace is (usage.cost goes before it). */
  usageClose?: number;
}

/**
 * Fast path, on the same reasoning as relayFrame (./chunks.ts): compact JSON whose first
 * `"model":` key names the engine's model and whose last key is a usage object. Key patterns
 * cannot come from generated text (a `"` inside a JSON string is always escaped), and the text
 * after the last `,"usage":` parses as an object only when it is the top object's own last key.
 * Anything else returns undefined.
 */
export function completionFast(bytes: Buffer, f: ModelFields): CompletionOut | undefined {
  let end = bytes.length;
  while (end > 0 && isSpace(bytes[end - 1]!)) end--;
  const close = end - 1;
  if (bytes[0] !== 123 || close < 1 || bytes[close] !== 125) return undefined; // {…}
  const mi = engineModelKey(bytes, 0, f.engineModelField);
  if (mi === -1) return undefined;
  const afterModel = mi + f.engineModelField.length;
  const last = lastUsage(bytes, afterModel, close);
  if (last === undefined) return undefined;
  const body = f.renamed
    ? Buffer.concat([bytes.subarray(0, mi), f.modelField, bytes.subarray(afterModel)])
    : bytes;
  const shift = f.renamed ? f.modelField.length - f.engineModelField.length : 0;
  return { body, usage: last.usage, usageClose: close - 1 + shift };
}

/** The parse-and-serialize way: any valid JSON object, the model echoed as the catalogue spells it. */
export function completionSlow(bytes: Buffer, model: string): CompletionOut {
  const json = JSON.parse(bytes.toString('utf8')) as unknown;
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new Error('engine sent a non-object');
  const o = json as Record<string, unknown>;
  if (o.model === model) return { body: bytes, usage: o.usage ?? null };
  o.model = model;
  return { body: JSON.stringify(o), usage: o.usage ?? null };
}

/**
 * The body with `usage.cost` and `usage.currency` (../../billing/call-cost.ts): spliced into the
 * fast path's bytes before the usage object's closing brace, else set on the parsed answer (with
 * the billed token counts when the engine sent no usage).
 */
export function withCost(out: CompletionOut, cost: CallCost, billed: TextUsage): Buffer | string {
  const { body, usageClose } = out;
  if (usageClose !== undefined && Buffer.isBuffer(body)) {
    const fields = `"cost":${JSON.stringify(cost.cost)},"currency":${JSON.stringify(cost.currency)}`;
    const sep = body[usageClose - 1] === 123 ? '' : ','; // an empty usage object: no comma
    return Buffer.concat([
      body.subarray(0, usageClose),
      Buffer.from(sep + fields),
      body.subarray(usageClose),
    ]);
  }
  const o = JSON.parse(typeof body === 'string' ? body : body.toString('utf8')) as Record<string, unknown>;
  const usage =
    typeof o.usage === 'object' && o.usage !== null
      ? o.usage
      : {
          prompt_tokens: billed.inputTokens,
          completion_tokens: billed.outputTokens,
          total_tokens: billed.inputTokens + billed.outputTokens,
        };
  o.usage = { ...usage, cost: cost.cost, currency: cost.currency };
  return JSON.stringify(o);
}

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

/**
 * The UTF-8 bytes a completion generated (every choice's content and tool-call arguments), for the
 * proxy's own token count when an engine reports no usage (an unreadable body counts as none).
 */
export function completionOutputBytes(body: Buffer | string): number {
  let json: unknown;
  try {
    json = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch {
    return 0;
  }
  return outputBytesOf(json as ChatCompletionLike);
}

interface ChatCompletionLike {
  choices?: {
    message?: { content?: unknown; tool_calls?: { function?: { name?: unknown; arguments?: unknown } }[] };
  }[];
}

/** completionOutputBytes of a completion already parsed. */
export function outputBytesOf(json: ChatCompletionLike | null): number {
  let bytes = 0;
  const text = (v: unknown) => {
    if (typeof v === 'string') bytes += Buffer.byteLength(v);
  };
  for (const c of Array.isArray(json?.choices) ? json.choices : []) {
    text(c?.message?.content);
    for (const t of Array.isArray(c?.message?.tool_calls) ? c.message.tool_calls : []) {
      text(t?.function?.name);
      text(t?.function?.arguments);
    }
  }
  return bytes;
}
