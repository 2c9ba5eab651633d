// The engine's whole (non-streamed) chat completion as the client's body, and its usage object.
// The engine's bytes are sent as they are when they already name the canonical model (or with only
// the model field swapped), so the usual answer is neither parsed whole nor serialized again: the
// profile put the engine answer's JSON.parse at ~2.5 % of the proxy's CPU. Answers in another shape
// take the parse-and-serialize way, which gives the same JSON. Either way only the fields of
// OpenAI's schema reach the client (./members.ts CLIENT_FIELDS): the rest are the engine's own.
import type { ModelFields } from './chunks.ts';
import { dropEngineFields, KEY, LAST_CLIENT_KEY, SPAN, topMembers } from './members.ts';
import { usageIn } from './reported-usage.ts';
import { schemaBytes, schemaObject } from './schema-nulls.ts';

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
  const bytes = schemaBytes(engineBytes);
  if (bytes === undefined) return undefined;
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
  const reshaped = schemaObject(o);
  if (o.model === model && Object.keys(o).length === fields && !reshaped)
    return { body: bytes, usage: o.usage ?? null };
  o.model = model;
  return { body: JSON.stringify(o), usage: o.usage ?? null };
}

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}
