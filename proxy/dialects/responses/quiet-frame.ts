// The engine frames of a stream that carry no text — the first (`"role":"assistant"`, empty
// content), the finishing one (`"delta":{}` with its finish_reason) and the usage-only one
// (`"choices":[]`) — read from their bytes. They make no Responses event (the finish reason is
// remembered for the end), so parsing each whole only to learn that was a fixed cost per stream
// that the chat surface, which relays them as bytes, does not pay. The same reasoning as
// ../openai/chunks.ts relayFrame: a `"` inside a JSON string is always escaped, so these key
// patterns cannot come from generated text. Any other frame returns undefined and is parsed.
import { usageKeyAt } from '../openai/chunks.ts';

const DATA = 6; // `data: `
const CHOICES_KEY = Buffer.from('"choices":[');
const FIRST_CHOICE = Buffer.from('{"index":0,"delta":');
/** The deltas that carry nothing a Responses stream shows. */
const QUIET_DELTAS = ['{}', '{"role":"assistant"}', '{"role":"assistant","content":""}'].map((d) =>
  Buffer.from(d),
);
const LOGPROBS_NULL = Buffer.from(',"logprobs":null');
const FINISH_KEY = Buffer.from(',"finish_reason":');
const FINISHES = ['null', '"stop"', '"length"', '"tool_calls"'].map((f) => Buffer.from(f));
const STOP_NULL = Buffer.from(',"stop_reason":null');
const USAGE_KEY_LENGTH = ',"usage":'.length;

export interface QuietFrame {
  /** The choice's finish_reason (null while it goes on; none for the usage-only frame). */
  finish: string | null;
  /** Where the frame's usage object starts (for usageIn), or -1 when it has none. */
  usageAt: number;
}

export function quietFrame(block: Buffer): QuietFrame | undefined {
  const n = block.length;
  const close = n - 3; // the object's closing brace, before `\n\n`
  if (n < DATA + 5 || block[DATA] !== 123 || block[close] !== 125) return undefined;
  const ci = block.indexOf(CHOICES_KEY, DATA);
  if (ci === -1) return undefined;
  let i = ci + CHOICES_KEY.length;
  let finish: string | null = null;
  if (block[i] === 93)
    i++; // `]`: the usage-only frame
  else {
    if (!at(block, i, FIRST_CHOICE)) return undefined;
    i += FIRST_CHOICE.length;
    const delta = QUIET_DELTAS.find((d) => at(block, i, d));
    if (delta === undefined) return undefined;
    i += delta.length;
    if (at(block, i, LOGPROBS_NULL)) i += LOGPROBS_NULL.length;
    if (!at(block, i, FINISH_KEY)) return undefined;
    i += FINISH_KEY.length;
    const f = FINISHES.find((v) => at(block, i, v));
    if (f === undefined) return undefined;
    i += f.length;
    if (f !== FINISHES[0]) finish = f.toString('latin1', 1, f.length - 1);
    if (at(block, i, STOP_NULL)) i += STOP_NULL.length;
    if (block[i] !== 125 || block[i + 1] !== 93) return undefined; // `}]`: the one choice ends
    i += 2;
  }
  if (i === close) return { finish, usageAt: -1 }; // no usage in it
  const ui = usageKeyAt(block, i, close);
  if (ui !== i) return undefined; // the usage object is the next and last key, or the slow way
  return { finish, usageAt: ui + USAGE_KEY_LENGTH };
}

function at(buf: Buffer, i: number, bytes: Buffer): boolean {
  return i + bytes.length <= buf.length && buf.compare(bytes, 0, bytes.length, i, i + bytes.length) === 0;
}
