// The fast way for the usual engine frame of a Messages stream — one choice, a text delta, not
// finishing — read from the frame's bytes without parsing it: its content (a JSON string, copied
// as it is into the text_delta) and where its usage object starts. Parsing every frame whole was
// what set the Messages surface's streams behind the chat surface's. The same reasoning as
// ../openai/chunks.ts relayFrame: a `"` inside a JSON string is always escaped, so the key
// patterns below cannot come from generated text. Any other frame returns undefined and takes the
// parse-and-translate way (./stream.ts chunk()), which gives the same events.
import { usageKeyAt } from '../openai/chunks.ts';

const DATA = 6; // `data: `
const CONTENT_KEY = Buffer.from('"choices":[{"index":0,"delta":{"content":"');
const LOGPROBS_NULL = Buffer.from(',"logprobs":null');
const FINISH_NULL = Buffer.from(',"finish_reason":null');
const STOP_NULL = Buffer.from(',"stop_reason":null');

export interface TextFrame {
  /** The content as JSON string bytes, quotes included (`"…"`); `""` for an empty delta. */
  text: Buffer;
  /** Where the frame's usage object starts (for usageIn), or -1 when the frame has none. */
  usageAt: number;
}

export function textFrame(block: Buffer): TextFrame | undefined {
  const n = block.length;
  const close = n - 3; // the object's closing brace, before `\n\n`
  if (n < DATA + 5 || block[DATA] !== 123 || block[close] !== 125) return undefined;
  const ci = block.indexOf(CONTENT_KEY, DATA);
  if (ci === -1) return undefined;
  const start = ci + CONTENT_KEY.length - 1; // the opening quote
  let i = start + 1;
  for (; i < close && block[i] !== 34; i++) if (block[i] === 92) i++;
  if (i >= close) return undefined;
  const text = block.subarray(start, i + 1);
  i++;
  if (block[i++] !== 125) return undefined; // the delta holds content alone
  i = skip(block, i, LOGPROBS_NULL);
  const afterFinish = skip(block, i, FINISH_NULL);
  if (afterFinish === i) return undefined; // finishing (or unknown) frames take the slow way
  i = skip(block, afterFinish, STOP_NULL);
  if (block[i] !== 125 || block[i + 1] !== 93) return undefined; // `}]`: the one choice ends
  i += 2;
  if (i === close) return { text, usageAt: -1 };
  const ui = usageKeyAt(block, i, close);
  if (ui !== i) return undefined; // anything between the choices and the usage: slow way
  return { text, usageAt: ui + ',"usage":'.length };
}

function skip(buf: Buffer, at: number, bytes: Buffer): number {
  if (at + bytes.length > buf.length) return at;
  return buf.compare(bytes, 0, bytes.length, at, at + bytes.length) === 0 ? at + bytes.length : at;
}
