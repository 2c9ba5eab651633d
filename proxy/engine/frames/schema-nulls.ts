// The chat answer in OpenAI's schema (issue 39 item 5), whatever the engine sent. Engine nulls where
// the schema promises a value: vLLM answers with `message.annotations: null`,
// `message.function_call: null`, `usage.prompt_tokens_details: null` and
// `usage.completion_tokens_details: null`, which OpenAI's published schema types as an array or
// object — a strict client's decoder fails on them; such a member leaves the proxy absent, as OpenAI
// leaves a value it has not. And members the schema requires (nullable) that an engine leaves out:
// llama.cpp sends no `choices[].logprobs` and no `message.refusal`; they leave the proxy as null.
//
// The fast path keeps the engine's bytes: the members are cut from them (or put in) without a parse
// (one regex pass over a latin1 view: bench/proxy/completion-fast.ts). A key pattern like
// `"annotations":null` cannot occur inside a JSON string (its quotes would be escaped there), so
// only real members match; an answer already in the schema is returned as it is.

/**
 * The members, found in one pass (four string searches cost ~0.5 us each: a search's setup): the
 * nulls to cut, and the keys that say whether `logprobs` and `refusal` are there.
 */
const MEMBER =
  /"(?:annotations|function_call|prompt_tokens_details|completion_tokens_details)":null|"(message|refusal|logprobs)":/g;

const REFUSAL = Buffer.from('"refusal":null');
const REFUSAL_COMMA = Buffer.from('"refusal":null,');
const LOGPROBS = Buffer.from('"logprobs":null,');

/**
 * `bytes` (compact JSON) in the schema: without the members above that are null, and with
 * `"logprobs":null` beside and `"refusal":null` in each choice's message when the answer has none of
 * them; the same buffer when nothing changes. Undefined when only some choices carry them (which
 * lack them takes a parse to know: the slow path's), or when a message object would be left empty.
 */
export function schemaBytes(bytes: Buffer): Buffer | undefined {
  // A latin1 view: a byte per char, so offsets are byte offsets.
  const text = bytes.toString('latin1');
  // Edits as [start, stop, inserted]: a cut when start < stop, an insertion when they are equal.
  const edits: [number, number, Buffer | null][] = [];
  const messages: number[] = [];
  let refusals = 0;
  let logprobs = 0;
  MEMBER.lastIndex = 0;
  for (let m = MEMBER.exec(text); m !== null; m = MEMBER.exec(text)) {
    const at = m.index;
    const end = at + m[0].length;
    if (m[1] === 'message') {
      if (bytes[end] === 123) messages.push(at);
    } else if (m[1] === 'refusal') refusals++;
    else if (m[1] === 'logprobs') logprobs++;
    // With the comma on one side: `,"k":null` (not first) or `"k":null,` (first of its object).
    else if (bytes[at - 1] === 44) edits.push([at - 1, end, null]);
    else edits.push([at, bytes[end] === 44 ? end + 1 : end, null]);
  }
  const n = messages.length;
  if ((refusals > 0 && refusals < n) || (logprobs > 0 && logprobs < n)) return undefined;
  for (const at of messages) {
    // `"message":{` is 11 bytes; the message's first member follows its brace.
    const inside = at + 11;
    if (refusals === 0) {
      if (edits.some(([start]) => start === inside)) return undefined;
      edits.push([inside, inside, bytes[inside] === 125 ? REFUSAL : REFUSAL_COMMA]);
    }
    if (logprobs === 0) edits.push([at, at, LOGPROBS]);
  }
  if (edits.length === 0) return bytes;
  // By start, an insertion before a cut at the same place.
  edits.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const [start, stop, inserted] of edits) {
    if (start < from) {
      // Its comma before went with the member before it (the first of its object, also cut):
      // it takes its comma after instead.
      from = bytes[stop] === 44 ? stop + 1 : stop;
      continue;
    }
    pieces.push(bytes.subarray(from, start));
    if (inserted !== null) pieces.push(inserted);
    from = stop;
  }
  pieces.push(bytes.subarray(from));
  return Buffer.concat(pieces);
}

/** The same for a parsed answer; true when it changed any (the answer must be serialized again). */
export function schemaObject(o: Record<string, unknown>): boolean {
  let changed = false;
  const drop = (obj: unknown, key: string) => {
    if (
      typeof obj === 'object' &&
      obj !== null &&
      key in obj &&
      (obj as Record<string, unknown>)[key] === null
    ) {
      delete (obj as Record<string, unknown>)[key];
      changed = true;
    }
  };
  const nullIfAbsent = (obj: unknown, key: string) => {
    if (typeof obj === 'object' && obj !== null && !Array.isArray(obj) && !(key in obj)) {
      (obj as Record<string, unknown>)[key] = null;
      changed = true;
    }
  };
  for (const c of Array.isArray(o.choices) ? o.choices : []) {
    const message = (c as { message?: unknown } | null)?.message;
    if (typeof message !== 'object' || message === null) continue;
    drop(message, 'annotations');
    drop(message, 'function_call');
    nullIfAbsent(message, 'refusal');
    nullIfAbsent(c, 'logprobs');
  }
  drop(o.usage, 'prompt_tokens_details');
  drop(o.usage, 'completion_tokens_details');
  return changed;
}
