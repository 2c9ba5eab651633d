// The top-level members of an engine's compact JSON object, found from its bytes without parsing
// it: where each key and value lie. Engines put their fields in different orders (vLLM ends its
// first stream frame with `"prompt_token_ids":null` after usage and its non-streamed answer with
// `prompt_logprobs`, `kv_transfer_params`; llama.cpp puts `choices` first and `timings` last), so
// the fast paths (./chunks.ts relayFrame, ./answer.ts completionFast) read the members in any
// order rather than expecting one layout. Strings are stepped over escape by escape (in JSON text
// a `"` inside a string is always escaped), so no key can come from generated content.
// Only compact JSON is read (no whitespace between tokens): anything else returns undefined and
// takes the parse-and-serialize way.

/** The top-level keys the fast paths tell apart; any other key is OTHER. */
export const KEY = {
  OTHER: 0,
  id: 1,
  object: 2,
  created: 3,
  model: 4,
  choices: 5,
  usage: 6,
  system_fingerprint: 7,
  service_tier: 8,
  timings: 9,
  // inside a choice and its delta (./delta-frame.ts)
  index: 10,
  delta: 11,
  logprobs: 12,
  finish_reason: 13,
  stop_reason: 14,
  token_ids: 15,
  content: 16,
} as const;
/** Keys up to this one are in CLIENT_FIELDS (below). */
export const LAST_CLIENT_KEY = KEY.service_tier;
const NAMES = Object.entries(KEY)
  .filter(([, id]) => id !== KEY.OTHER)
  .map(([name, id]) => ({ id, bytes: Buffer.from(name, 'latin1') }));

/**
 * Members are written into a scratch array, four numbers each: the key's id (KEY), where the
 * member starts (its key's opening quote), where its value starts, and just after its value. No
 * object or string is made per member: this runs for every frame of every stream.
 */
export const SPAN = 4;
const scratch = new Int32Array(SPAN * 64);

/**
 * The members of the object from `open` (its `{`) to `close` (its `}`), in order, in the returned
 * array (valid until the next call); its count is the second value. Undefined when the bytes
 * between are not a compact object's members (or there are more than 64).
 */
export function topMembers(buf: Buffer, open: number, close: number): [Int32Array, number] | undefined {
  if (buf[open] !== 123 || buf[close] !== 125) return undefined;
  let n = 0;
  let i = open + 1;
  if (i === close) return [scratch, 0];
  for (;;) {
    if (buf[i] !== 34 || n === 64) return undefined;
    const keyEnd = stringEnd(buf, i, close);
    if (keyEnd === -1 || buf[keyEnd] !== 58) return undefined; // `:`
    const value = keyEnd + 1;
    const end = valueEnd(buf, value, close);
    if (end === -1) return undefined;
    const at = n * SPAN;
    const id = keyId(buf, i + 1, keyEnd - 1);
    if (id === -1) return undefined;
    scratch[at] = id;
    scratch[at + 1] = i;
    scratch[at + 2] = value;
    scratch[at + 3] = end;
    n++;
    if (end === close) return [scratch, n];
    if (buf[end] !== 44) return undefined; // `,`
    i = end + 1;
  }
}

export function keyId(buf: Buffer, from: number, to: number): number {
  const len = to - from;
  for (const { id, bytes } of NAMES) {
    if (bytes.length !== len || bytes[0] !== buf[from]) continue;
    let k = 1;
    while (k < len && bytes[k] === buf[from + k]) k++;
    if (k === len) return id;
  }
  // An escaped key could spell a known one: such a frame takes the parsing way.
  return buf.indexOf(92, from) !== -1 && buf.indexOf(92, from) < to ? -1 : KEY.OTHER;
}

/**
 * Just after the string whose opening quote is at `at`; -1 when it does not close before `limit`.
 * A plain loop: an engine frame's strings are short (keys, ids, one token), and a native indexOf
 * call per string cost more than the bytes it skipped.
 */
export function stringEnd(buf: Buffer, at: number, limit: number): number {
  for (let i = at + 1; i < limit; i++) {
    const c = buf[i];
    if (c === 34) return i + 1;
    if (c === 92) i++; // an escape: the next byte is never the end
  }
  return -1;
}

/** Just after the value starting at `at` (an object, array, string or scalar); -1 when malformed. */
export function valueEnd(buf: Buffer, at: number, close: number): number {
  const c = buf[at];
  if (c === 34) return stringEnd(buf, at, close);
  if (c === 123 || c === 91) {
    let depth = 0;
    for (let i = at; i < close; i++) {
      const b = buf[i];
      if (b === 34) {
        const e = stringEnd(buf, i, close);
        if (e === -1) return -1;
        i = e - 1;
      } else if (b === 123 || b === 91) depth++;
      else if (b === 125 || b === 93) {
        if (--depth === 0) return i + 1;
      }
    }
    return -1;
  }
  let i = at;
  while (i < close && buf[i] !== 44) {
    const b = buf[i]!;
    // a number, true, false or null: nothing structural, no whitespace
    if (b === 123 || b === 125 || b === 91 || b === 93 || b === 34 || b <= 32) return -1;
    i++;
  }
  return i === at ? -1 : i;
}

/**
 * The top-level fields OpenAI's schemas give a chat completion and its stream chunks. Engines add
 * their own beside them — vLLM `prompt_token_ids`, `prompt_logprobs`, `kv_transfer_params`;
 * llama.cpp `timings`, `prompt_progress`, `__verbose` — which are the engine's internals, not the
 * API's: the proxy forwards only these, for every engine type, fast path or slow alike.
 */
export const CLIENT_FIELDS: ReadonlySet<string> = new Set([
  'id',
  'object',
  'created',
  'model',
  'choices',
  'usage',
  'system_fingerprint',
  'service_tier',
]);

/** Drops the fields outside CLIENT_FIELDS from a parsed answer or chunk (the slow paths). */
export function dropEngineFields(o: Record<string, unknown>): void {
  for (const k of Object.keys(o)) if (!CLIENT_FIELDS.has(k)) delete o[k];
}
