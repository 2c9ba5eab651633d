// Engine nulls where OpenAI's schema promises a value (issue 39 item 5): vLLM answers with
// `message.annotations: null`, `message.function_call: null`, `usage.prompt_tokens_details: null`
// and `usage.completion_tokens_details: null`, which OpenAI's published schema types as an array
// or object — a strict client's decoder fails on them. Such a member leaves the proxy absent, as
// OpenAI leaves a value it has not.
//
// The fast path keeps the engine's bytes: the members are cut from them without a parse (one
// regex pass over a latin1 view: bench/proxy/completion-fast.ts, ~+0.7 us on a 500-byte answer). A key
// pattern like `"annotations":null` cannot occur inside a JSON string (its quotes would be escaped
// there), so only real members match; an answer without any is returned as it is.

/** The members, found in one pass (four string searches cost ~0.5 us each: a search's setup). */
const MEMBER = /"(?:annotations|function_call|prompt_tokens_details|completion_tokens_details)":null/g;

/** `bytes` (compact JSON) without the NULLED members that are null; the same buffer when it has none. */
export function withoutSchemaNulls(bytes: Buffer): Buffer {
  // A latin1 view: a byte per char, so offsets are byte offsets.
  const text = bytes.toString('latin1');
  const cuts: number[] = [];
  MEMBER.lastIndex = 0;
  for (let m = MEMBER.exec(text); m !== null; m = MEMBER.exec(text)) {
    const at = m.index;
    const end = at + m[0].length;
    // With the comma on one side: `,"k":null` (not first) or `"k":null,` (first of its object).
    if (bytes[at - 1] === 44) cuts.push(at - 1, end);
    else cuts.push(at, bytes[end] === 44 ? end + 1 : end);
  }
  if (cuts.length === 0) return bytes;
  const order = [];
  for (let c = 0; c < cuts.length; c += 2) order.push([cuts[c]!, cuts[c + 1]!] as const);
  order.sort((a, b) => a[0] - b[0]);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const [start, stop] of order) {
    if (start < from) {
      // Its comma before went with the member before it (the first of its object, also cut):
      // it takes its comma after instead.
      from = bytes[stop] === 44 ? stop + 1 : stop;
      continue;
    }
    pieces.push(bytes.subarray(from, start));
    from = stop;
  }
  pieces.push(bytes.subarray(from));
  return Buffer.concat(pieces);
}

/** The same for a parsed answer; true when it removed any (the answer must be serialized again). */
export function dropSchemaNulls(o: Record<string, unknown>): boolean {
  let dropped = false;
  const drop = (obj: unknown, key: string) => {
    if (
      typeof obj === 'object' &&
      obj !== null &&
      key in obj &&
      (obj as Record<string, unknown>)[key] === null
    ) {
      delete (obj as Record<string, unknown>)[key];
      dropped = true;
    }
  };
  for (const c of Array.isArray(o.choices) ? o.choices : []) {
    const message = (c as { message?: unknown } | null)?.message;
    drop(message, 'annotations');
    drop(message, 'function_call');
  }
  drop(o.usage, 'prompt_tokens_details');
  drop(o.usage, 'completion_tokens_details');
  return dropped;
}
