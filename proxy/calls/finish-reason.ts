// The engine's finish_reason, read from bytes the proxy already holds (issue 37 item 7: the console
// shows why each call ended). Engines speak chat completions whatever the client's dialect, so it
// is `"finish_reason":"<word>"` in the whole answer or in a stream's finishing frame. Read once
// per call, at its end, from the bytes as they are: the hot relay path stays as it was.
const KEY = Buffer.from('"finish_reason":');
const MAX = 40; // longer than any finish reason an engine sends; anything longer is not one

/** The last non-null finish_reason in `bytes` (the first choice's for one-choice answers), else null. */
export function finishReasonIn(bytes: Buffer | string): string | null {
  const b = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
  let at = b.lastIndexOf(KEY);
  while (at !== -1) {
    let i = at + KEY.length;
    while (b[i] === 32) i++; // a space after the colon (Python's json.dumps)
    if (b[i] === 34) {
      const end = b.indexOf(34, i + 1);
      if (end !== -1 && end - i - 1 <= MAX) {
        const word = b.toString('latin1', i + 1, end);
        if (/^[a-z_]+$/.test(word)) return word;
      }
    }
    at = at === 0 ? -1 : b.lastIndexOf(KEY, at - 1);
  }
  return null;
}

/**
 * The frames a stream's finish reason can be in: its last few (vLLM puts it on the last token's
 * frame, then may send a usage-only frame; llama.cpp a frame of its own). A frame's bytes are kept
 * by reference, not copied.
 */
export class LastFrames {
  private readonly kept: (Buffer | string)[] = [];

  add(frame: Buffer | string): void {
    if (this.kept.length === 3) this.kept.shift();
    this.kept.push(frame);
  }

  finishReason(): string | null {
    for (let i = this.kept.length - 1; i >= 0; i--) {
      const found = finishReasonIn(this.kept[i]!);
      if (found !== null) return found;
    }
    return null;
  }
}
