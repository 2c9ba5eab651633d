// The top-level members of an engine's compact JSON object, found from its bytes without parsing
// it: where each key and value lie. Engines put their fields in different orders (vLLM ends its
// first stream frame with `"prompt_token_ids":null` after usage and its non-streamed answer with
// `prompt_logprobs`, `kv_transfer_params`; llama.cpp puts `choices` first and `timings` last), so
// the fast paths (./chunks.ts relayFrame, ./completion.ts completionFast) read the members in any
// order rather than expecting one layout. Strings are stepped over with indexOf (in JSON text a
// `"` inside a string is always escaped), so the generated content is not looked at byte by byte.
// Only compact JSON is read (no whitespace between tokens): anything else returns undefined and
// takes the parse-and-serialize way.

export interface Member {
  /** The key, unescaped only as far as engines' keys need (plain ASCII names). */
  key: string;
  /** Where the member starts: its key's opening quote. */
  start: number;
  /** Where its value starts. */
  value: number;
  /** Just after its value. */
  end: number;
}

/**
 * The members of the object from `open` (its `{`) to `close` (its `}`), in order; undefined when
 * the bytes between are not a compact object's members.
 */
export function topMembers(buf: Buffer, open: number, close: number): Member[] | undefined {
  if (buf[open] !== 123 || buf[close] !== 125) return undefined;
  const out: Member[] = [];
  let i = open + 1;
  if (i === close) return out;
  for (;;) {
    if (buf[i] !== 34) return undefined;
    const keyEnd = stringEnd(buf, i, close);
    if (keyEnd === -1 || buf[keyEnd] !== 58) return undefined; // `:`
    const value = keyEnd + 1;
    const end = valueEnd(buf, value, close);
    if (end === -1) return undefined;
    out.push({ key: buf.toString('latin1', i + 1, keyEnd - 1), start: i, value, end });
    if (end === close) return out;
    if (buf[end] !== 44) return undefined; // `,`
    i = end + 1;
  }
}

/** Just after the string whose opening quote is at `at`; -1 when it does not close before `limit`. */
function stringEnd(buf: Buffer, at: number, limit: number): number {
  let from = at + 1;
  for (;;) {
    const q = buf.indexOf(34, from);
    if (q === -1 || q >= limit) return -1;
    let slashes = 0;
    for (let k = q - 1; buf[k] === 92; k--) slashes++;
    if (slashes % 2 === 0) return q + 1;
    from = q + 1;
  }
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
