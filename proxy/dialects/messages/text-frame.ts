// The fast way for the usual engine frame of a Messages stream — one choice, a text delta, not
// finishing — read from the frame's bytes without parsing it: its content (a JSON string, copied
// as it is into the text_delta) and where its usage object starts. Parsing every frame whole was
// what set the Messages surface's streams behind the chat surface's. The frame's fields, its
// choice's and its delta's are read in any order (../openai/members.ts), so vLLM's frames
// (`token_ids`, `stop_reason` in the choice) and llama.cpp's (`finish_reason` first, `timings`
// after) take it as the simulator's do. In JSON text a `"` inside a string is always escaped, so
// no key can come from generated text. Any other frame returns undefined and takes the
// parse-and-translate way (./stream.ts chunk()), which gives the same events.
import { KEY, SPAN, topMembers, valueEnd } from '../openai/members.ts';

const DATA = 6; // `data: `

export interface TextFrame {
  /** The content as JSON string bytes, quotes included (`"…"`); `""` for an empty delta. */
  text: Buffer;
  /** Where the frame's usage object starts (for usageIn), or -1 when the frame has none. */
  usageAt: number;
}

export function textFrame(block: Buffer): TextFrame | undefined {
  const n = block.length;
  if (n < DATA + 5 || block[n - 2] !== 10 || block[n - 1] !== 10) return undefined;
  const top = topMembers(block, DATA, n - 3);
  if (top === undefined) return undefined;
  let choices = -1;
  let choicesEnd = -1;
  let usageAt = -1;
  for (let i = 0; i < top[1] * SPAN; i += SPAN) {
    const id = top[0][i];
    const value = top[0][i + 2]!;
    if (id === KEY.choices) {
      choices = value;
      choicesEnd = top[0][i + 3]!;
    } else if (id === KEY.usage) {
      if (block[value] === 123) usageAt = value;
      else if (!isNull(block, value, top[0][i + 3]!)) return undefined;
    } else if (
      id === KEY.OTHER &&
      block.compare(ERROR, 0, ERROR.length, top[0][i + 1]!, top[0][i + 2]!) === 0
    )
      return undefined;
  }
  // exactly one choice: `[{…}]`
  if (choices === -1 || block[choices] !== 91 || block[choices + 1] !== 123) return undefined;
  const choiceEnd = valueEnd(block, choices + 1, choicesEnd);
  if (choiceEnd !== choicesEnd - 1 || block[choiceEnd] !== 93) return undefined;
  const choice = topMembers(block, choices + 1, choiceEnd - 1);
  if (choice === undefined) return undefined;
  let delta = -1;
  let deltaEnd = -1;
  let finished = true;
  for (let i = 0; i < choice[1] * SPAN; i += SPAN) {
    const id = choice[0][i];
    const value = choice[0][i + 2]!;
    const end = choice[0][i + 3]!;
    if (id === KEY.delta) {
      delta = value;
      deltaEnd = end;
    } else if (id === KEY.finish_reason) {
      if (!isNull(block, value, end)) return undefined; // finishing frames take the slow way
      finished = false;
    } else if (id === KEY.index) {
      if (end - value !== 1 || block[value] !== 48) return undefined; // 0
    } else if (id === KEY.logprobs || id === KEY.stop_reason || id === KEY.token_ids) {
      if (!isNull(block, value, end)) return undefined;
    } else return undefined;
  }
  if (delta === -1 || finished || block[delta] !== 123) return undefined;
  const d = topMembers(block, delta, deltaEnd - 1);
  // the delta holds content alone, a string
  if (d === undefined || d[1] !== 1 || d[0][0] !== KEY.content || block[d[0][2]!] !== 34) return undefined;
  return { text: block.subarray(d[0][2]!, d[0][3]!), usageAt };
}

const ERROR = Buffer.from('"error"');

function isNull(buf: Buffer, value: number, end: number): boolean {
  return end - value === 4 && buf[value] === 110 && buf[value + 1] === 117;
}
