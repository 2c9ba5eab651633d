// The client's body for a non-streaming chat completion, and its usage. The engine's bytes are
// sent as they are when they already name the canonical model (or with only the model field
// swapped), so the usual answer is neither parsed whole nor serialized again: the profile put the
// engine answer's JSON.parse at ~2.5 % of the proxy's CPU. Answers in another shape take the
// parse-and-serialize way, which gives the same JSON.
import type { CallCost } from '../../billing/call-cost.ts';
import type { TextUsage } from '../../billing/text-quote.ts';
import { type ModelFields, usageIn } from './chunks.ts';
import { dropEngineFields, KEY, LAST_CLIENT_KEY, SPAN, topMembers } from './members.ts';
import { dropSchemaNulls, withoutSchemaNulls } from './schema-nulls.ts';

export interface CompletionOut {
  /** What the client receives. */
  body: Buffer | string;
  /** The answer's usage object (null when it has none). */
  usage: unknown;
  /** Fast path: where in `body` the usage object's closing brace is (usage.cost goes before it). */
  usageClose?: number;
}

/**
 * Fast path, on the same reasoning as relayFrame (./chunks.ts): compact JSON, its fields in any
 * order (./members.ts), whose `model` names the engine's model and whose usage is an object. The
 * engine's own fields (vLLM's `prompt_logprobs`, `kv_transfer_params`; llama.cpp's `timings`) are
 * left out as completionSlow leaves them; when nothing is renamed or left out, the engine's bytes
 * are the body. Anything else returns undefined.
 */
export function completionFast(engineBytes: Buffer, f: ModelFields): CompletionOut | undefined {
  const bytes = withoutSchemaNulls(engineBytes);
  let end = bytes.length;
  while (end > 0 && isSpace(bytes[end - 1]!)) end--;
  const close = end - 1;
  if (close < 1) return undefined;
  const found = topMembers(bytes, 0, close);
  if (found === undefined) return undefined;
  const [m, count] = found;
  let model = -1;
  let usage = -1;
  let dropped = false;
  for (let i = 0; i < count * SPAN; i += SPAN) {
    if (m[i] === KEY.model) model = i;
    else if (m[i] === KEY.usage) usage = i;
    else if (m[i] === KEY.OTHER || m[i]! > LAST_CLIENT_KEY) dropped = true;
  }
  const field = f.engineModelField;
  if (model === -1 || usage === -1 || bytes[m[usage + 2]!] !== 123) return undefined;
  const ms = m[model + 1]!;
  if (
    m[model + 3]! - ms !== field.length ||
    bytes.compare(field, 0, field.length, ms, ms + field.length) !== 0
  )
    return undefined;
  const parsed = usageIn(bytes, m[usage + 2]!, m[usage + 3]!);
  if (parsed === undefined) return undefined;
  if (!f.renamed && !dropped) return { body: bytes, usage: parsed, usageClose: m[usage + 3]! - 1 };
  // Rebuilt from the kept members' bytes; usageClose is where usage's `}` lands in the new body.
  const pieces: Buffer[] = [OPEN];
  let at = 1;
  let usageClose = 0;
  for (let i = 0; i < count * SPAN; i += SPAN) {
    const id = m[i]!;
    if (id === KEY.OTHER || id > LAST_CLIENT_KEY) continue;
    if (pieces.length > 1) {
      pieces.push(COMMA);
      at++;
    }
    const piece = id === KEY.model && f.renamed ? f.modelField : bytes.subarray(m[i + 1]!, m[i + 3]!);
    if (i === usage) usageClose = at + piece.length - 1;
    pieces.push(piece);
    at += piece.length;
  }
  pieces.push(CLOSE);
  return { body: Buffer.concat(pieces), usage: parsed, usageClose };
}

const OPEN = Buffer.from('{');
const CLOSE = Buffer.from('}');
const COMMA = Buffer.from(',');

/** The parse-and-serialize way: any valid JSON object, the model echoed as the catalogue spells it. */
export function completionSlow(bytes: Buffer, model: string): CompletionOut {
  const json = JSON.parse(bytes.toString('utf8')) as unknown;
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new Error('engine sent a non-object');
  const o = json as Record<string, unknown>;
  const fields = Object.keys(o).length;
  dropEngineFields(o);
  const nulls = dropSchemaNulls(o);
  if (o.model === model && Object.keys(o).length === fields && !nulls)
    return { body: bytes, usage: o.usage ?? null };
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
