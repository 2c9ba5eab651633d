// Every usual engine chat-completion frame read from its bytes, never parsed, for the stream
// translators of the Responses and Messages dialects (DeltaReader below, one per stream): the
// first (role, empty content), the text frames, the one that finishes (vLLM puts the finish reason
// on the last token's frame), the usage-only one — in any field order (vLLM ends its first frame
// with prompt_token_ids, its usage frame with system_fingerprint; llama.cpp puts choices first and
// timings last). It reads exactly what the parse way (the translators' chunk(), and the relay's
// own reading: usage, cached tokens, content, an error frame) takes from the same frame: the
// first choice's delta content, finish_reason and (for Messages' stop_sequence) where a non-null
// stop_reason lies; what that way ignores (index, logprobs, token_ids, the delta's role, the
// engine's own top-level fields) is stepped over. A delta carrying anything else (reasoning, tool
// calls), a second choice, or a value that way reads differently (a finish reason with an escape,
// content that is not a string) returns undefined and the frame is parsed. One pass over the
// bytes, the choice and its delta read as they are met (not found first and then read again):
// this runs for every frame of every stream. In JSON text a `"` inside a string is always
// escaped, so no key can come from generated text (./members.ts, whose key table and string
// stepping this shares).
import { cacheN } from './cached-tokens.ts';
import { KEY, keyId, stringEnd, valueEnd } from './members.ts';

const DATA = 6; // `data: `
const ERROR = Buffer.from('"error"');
const ROLE = Buffer.from('"role"');

export interface DeltaFrame {
  /** The delta's content as its JSON string bytes (`"…"`, quotes included); null for none or `""`. */
  text: Buffer | null;
  /** The choice's finish_reason; null while the stream goes on (and for a frame without choices). */
  finish: string | null;
  /** Where the frame's usage object starts (for usageIn), or -1 when it has none. */
  usageAt: number;
  /** llama.cpp's `timings.cache_n` when the frame carries timings (./cached-tokens.ts). */
  cached: number | null;
  /**
   * Where the choice's stop_reason value lies (vLLM's matched stop string or token) when it is not
   * null, [start, end); [-1, -1] otherwise. Read only for a finishing frame (JSON.parse of the slice).
   */
  stopAt: number;
  stopEnd: number;
}

// What the choice being read holds (set by readChoices; one frame is read at a time), and what
// the last frame read was made of, for FrameShape.learn: where its content string lies, how many
// times each key that matters came, and its usage object's end.
let text: Buffer | null = null;
let finish: string | null = null;
let stopAt = -1;
let stopEnd = -1;
let textAt = -1;
let textEnd = -1;
let choiceKeys = 0;
let deltaKeys = 0;
let contentKeys = 0;
let usageKeys = 0; // and timings
let usageEnd = -1;

export function deltaFrame(block: Buffer): DeltaFrame | undefined {
  const n = block.length;
  const close = n - 3; // the object's closing brace, before `\n\n`
  if (n < DATA + 5 || block[n - 2] !== 10 || block[n - 1] !== 10) return undefined;
  if (block[DATA] !== 123 || block[close] !== 125) return undefined;
  let choices = false;
  let usageAt = -1;
  let cached: number | null = null;
  text = null;
  finish = null;
  choiceKeys = deltaKeys = contentKeys = usageKeys = 0;
  let i = DATA + 1;
  if (i === close) return undefined;
  // The top object's members; the last of a repeated key counts, as for JSON.parse.
  for (;;) {
    const keyEnd = block[i] === 34 ? stringEnd(block, i, close) : -1;
    if (keyEnd === -1 || block[keyEnd] !== 58) return undefined; // `:`
    const id = keyId(block, i + 1, keyEnd - 1);
    const value = keyEnd + 1;
    let end: number;
    if (id === KEY.choices) {
      end = readChoices(block, value, close);
      choices = true;
      choiceKeys++;
    } else {
      end = valueEnd(block, value, close);
      if (id === KEY.usage) {
        usageKeys++;
        usageEnd = end;
        if (block[value] === 123) usageAt = value;
        else if (isNull(block, value, end)) usageAt = -1;
        else return undefined;
      } else if (id === KEY.timings) {
        cached = cacheN(block, value, end);
        usageKeys += 2; // a frame with timings is not learnt (cached would vary)
      } else if (id === -1 || (id === KEY.OTHER && is(block, i, keyEnd, ERROR))) return undefined;
    }
    if (end === -1) return undefined;
    if (end === close) break;
    if (block[end] !== 44) return undefined; // `,`
    i = end + 1;
  }
  return choices ? { text, finish, usageAt, cached, stopAt, stopEnd } : undefined;
}

/**
 * The text frames of one stream are the same bytes but for their content string and their usage's
 * numbers (id, created, model, the choice's other fields do not change within a stream). A shape
 * is learnt from one text frame deltaFrame read whole — the bytes before its content string, those
 * between the string and its usage object, those after — and a later frame with the same bytes
 * there is read by comparing them (native compares) and stepping over its string and its usage
 * object alone. A JSON reader's state after the same bytes is the same, so such a frame reads as
 * the learnt one did (a text delta, no finish reason) but for its own text and usage; any other
 * frame (the finishing one, the usage-only one, one with timings) differs somewhere and is read
 * whole by deltaFrame.
 */
export class FrameShape {
  private constructor(
    /** The bytes up to the content's opening quote, included. */
    private readonly head: Buffer,
    /** From the content's closing quote (excluded) to the usage object, or to the end. */
    private readonly middle: Buffer,
    /** After the usage object; null when the frame had none. */
    private readonly tail: Buffer | null,
  ) {}

  /**
   * The shape of the frame deltaFrame just read (`block`, which it took), or null when that frame
   * is not one a shape is learnt from: a text delta without a finish reason, each key that
   * matters once, no timings, its usage (if any) after its content.
   */
  static learn(block: Buffer, f: DeltaFrame): FrameShape | null {
    if (f.text === null || f.finish !== null || choiceKeys !== 1 || deltaKeys !== 1 || contentKeys !== 1)
      return null;
    if (usageKeys > 1) return null;
    if (f.usageAt === -1) {
      if (usageKeys !== 0) return null;
      return new FrameShape(
        Buffer.from(block.subarray(0, textAt + 1)),
        Buffer.from(block.subarray(textEnd)),
        null,
      );
    }
    if (f.usageAt < textEnd) return null;
    return new FrameShape(
      Buffer.from(block.subarray(0, textAt + 1)),
      Buffer.from(block.subarray(textEnd, f.usageAt)),
      Buffer.from(block.subarray(usageEnd)),
    );
  }

  /** `block` read as the learnt frame was, when its bytes but its text and usage are the same. */
  read(block: Buffer): DeltaFrame | undefined {
    const { head, middle, tail } = this;
    const n = block.length;
    if (n < head.length + 1 + middle.length) return undefined;
    if (block.compare(head, 0, head.length, 0, head.length) !== 0) return undefined;
    const at = head.length - 1; // the content's opening quote
    const end = stringEnd(block, at, n);
    if (end === -1 || end + middle.length > n) return undefined;
    if (block.compare(middle, 0, middle.length, end, end + middle.length) !== 0) return undefined;
    const text = end - at > 2 ? block.subarray(at, end) : null;
    if (tail === null)
      return end + middle.length === n
        ? { text, finish: null, usageAt: -1, cached: null, stopAt: -1, stopEnd: -1 }
        : undefined;
    const usageAt = end + middle.length;
    if (block[usageAt] !== 123) return undefined;
    const after = valueEnd(block, usageAt, n - tail.length);
    if (after !== n - tail.length || block.compare(tail, 0, tail.length, after, n) !== 0) return undefined;
    return { text, finish: null, usageAt, cached: null, stopAt: -1, stopEnd: -1 };
  }
}

/**
 * One stream's frames read from their bytes: the first text frame deltaFrame reads whole teaches
 * the stream's FrameShape, by which the later ones are read. Undefined for a frame that is to be
 * parsed instead.
 */
export class DeltaReader {
  private shape: FrameShape | null = null;

  read(block: Buffer): DeltaFrame | undefined {
    const f = this.shape?.read(block);
    if (f !== undefined) return f;
    const whole = deltaFrame(block);
    if (whole !== undefined) this.shape ??= FrameShape.learn(block, whole);
    return whole;
  }
}

/** Just after `"choices":[…]` holding no choice or one, read into text and finish; -1 otherwise. */
function readChoices(block: Buffer, at: number, close: number): number {
  text = null;
  finish = null;
  stopAt = stopEnd = -1;
  if (block[at] !== 91) return -1; // `[`
  if (block[at + 1] === 93) return at + 2; // `[]`
  if (block[at + 1] !== 123) return -1;
  let i = at + 2;
  if (block[i] !== 125) {
    for (;;) {
      const keyEnd = block[i] === 34 ? stringEnd(block, i, close) : -1;
      if (keyEnd === -1 || block[keyEnd] !== 58) return -1;
      const id = keyId(block, i + 1, keyEnd - 1);
      const value = keyEnd + 1;
      let end: number;
      if (id === KEY.delta) {
        end = readDelta(block, value, close);
        deltaKeys++;
      } else {
        end = memberEnd(block, value, close);
        if (end === -1) return -1;
        if (id === KEY.finish_reason) {
          finish = isNull(block, value, end) ? null : plainString(block, value, end);
          if (finish === null && !isNull(block, value, end)) return -1;
        } else if (id === KEY.stop_reason) {
          const none = isNull(block, value, end);
          stopAt = none ? -1 : value;
          stopEnd = none ? -1 : end;
        } else if (id === -1) return -1;
      }
      if (end === -1) return -1;
      i = end;
      if (block[i] === 125) break; // `}`
      if (block[i] !== 44) return -1;
      i++;
    }
  }
  return block[i + 1] === 93 ? i + 2 : -1; // `}]`: one choice, no second
}

/** Just after the delta object at `at`, its content read into text; -1 for any other delta. */
function readDelta(block: Buffer, at: number, close: number): number {
  text = null;
  if (block[at] !== 123) return -1;
  let i = at + 1;
  if (block[i] === 125) return i + 1; // `{}`
  for (;;) {
    const keyEnd = block[i] === 34 ? stringEnd(block, i, close) : -1;
    if (keyEnd === -1 || block[keyEnd] !== 58) return -1;
    const value = keyEnd + 1;
    const end = memberEnd(block, value, close);
    if (end === -1) return -1;
    if (keyId(block, i + 1, keyEnd - 1) === KEY.content) {
      contentKeys++;
      textAt = value;
      textEnd = end;
      if (block[value] === 34) text = end - value > 2 ? block.subarray(value, end) : null;
      else if (isNull(block, value, end)) text = null;
      else return -1;
    } else if (!is(block, i, keyEnd, ROLE) && !isNull(block, value, end)) return -1;
    if (block[end] === 125) return end + 1;
    if (block[end] !== 44) return -1;
    i = end + 1;
  }
}

/** Just after a member's value inside a nested object: a scalar ends at `,` or `}`. */
function memberEnd(block: Buffer, at: number, close: number): number {
  const c = block[at];
  if (c === 34 || c === 123 || c === 91) return valueEnd(block, at, close);
  let i = at;
  for (; i < close; i++) {
    const b = block[i]!;
    if (b === 44 || b === 125) break;
    // a number, true, false or null: nothing structural, no whitespace
    if (b === 123 || b === 91 || b === 93 || b === 34 || b <= 32) return -1;
  }
  return i === at || i === close ? -1 : i;
}

function isNull(buf: Buffer, value: number, end: number): boolean {
  return (
    end - value === 4 &&
    buf[value] === 110 &&
    buf[value + 1] === 117 &&
    buf[value + 2] === 108 &&
    buf[value + 3] === 108
  );
}

/** Whether the key from `from` to `to` (its quotes included) is `key`. */
function is(buf: Buffer, from: number, to: number, key: Buffer): boolean {
  return to - from === key.length && buf.compare(key, 0, key.length, from, to) === 0;
}

/** A string value of plain ASCII letters and `_` (every finish reason), else null. */
function plainString(buf: Buffer, value: number, end: number): string | null {
  if (buf[value] !== 34 || end - value < 3) return null;
  for (let i = value + 1; i < end - 1; i++) {
    const c = buf[i]!;
    if (!((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95)) return null;
  }
  return buf.toString('latin1', value + 1, end - 1);
}
