// Engine server-sent events, parsed in layers the way openai-node does it: bytes are buffered and cut
// only at a blank line (`\n\n`, `\r\r`, `\r\n\r\n`), each complete block is split into lines, and
// lines become events (comments dropped). No layer ever runs a regex over a raw network chunk, so a
// multi-byte character or a `\r\n` split across chunks cannot corrupt a frame.

export interface SseEvent {
  event: string | null;
  data: string;
}

const LF = 0x0a;
const CR = 0x0d;

/** Index just past the first blank line in `buf` at or after `from`, or -1. */
export function findBlankLine(buf: Uint8Array, from = 0): number {
  for (let i = from; i < buf.length - 1; i++) {
    const a = buf[i];
    const b = buf[i + 1];
    if (a === LF && b === LF) return i + 2;
    if (a === CR && b === CR) return i + 2;
    if (a === CR && b === LF && i + 3 < buf.length && buf[i + 2] === CR && buf[i + 3] === LF) return i + 4;
  }
  return -1;
}

/** findBlankLine for a buffer known to hold no CR from `from` on: native scans for `\n\n`. */
function findLfBlankLine(buf: Buffer, from: number): number {
  let i = buf.indexOf(LF, from);
  while (i !== -1 && i < buf.length - 1) {
    if (buf[i + 1] === LF) return i + 2;
    i = buf.indexOf(LF, i + 1);
  }
  return -1;
}

/** Layer 1: bytes in, complete event blocks out. */
export class SseBlockSplitter {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Uint8Array): Buffer[] {
    // Rescan the last 3 buffered bytes: a `\r\n\r\n` may straddle the chunk boundary.
    const scanFrom = Math.max(0, this.pending.length - 3);
    // A view of the chunk, not a copy: stream chunks are never reused by their producer, and the
    // usual chunk ends on a frame boundary, so nothing of it is kept past this call.
    let buf =
      this.pending.length === 0
        ? Buffer.isBuffer(chunk)
          ? chunk
          : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
        : Buffer.concat([this.pending, chunk]);
    const blocks: Buffer[] = [];
    // The usual engine writes LF only: then only `\n\n` can end a block, found by native scans.
    const lfOnly = buf.indexOf(CR, scanFrom) === -1;
    let end = lfOnly ? findLfBlankLine(buf, scanFrom) : findBlankLine(buf, scanFrom);
    while (end !== -1) {
      blocks.push(buf.subarray(0, end));
      buf = buf.subarray(end);
      end = lfOnly ? findLfBlankLine(buf, 0) : findBlankLine(buf);
    }
    this.pending = buf;
    return blocks;
  }

  /** What is left when the stream ends: a final event without its blank line, if any. */
  flush(): Buffer | null {
    const rest = this.pending;
    this.pending = Buffer.alloc(0);
    return rest.length > 0 ? rest : null;
  }
}

/** Layer 2: one complete block (never split inside a character) into its lines. */
export function blockLines(block: Uint8Array): string[] {
  const text = Buffer.from(block.buffer, block.byteOffset, block.byteLength).toString('utf8');
  if (text.indexOf('\r') === -1) {
    // The usual block (LF only): a native split, minus the empty piece after a final LF.
    const lines = text.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    return lines;
  }
  const lines: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === LF || c === CR) {
      lines.push(text.slice(start, i));
      if (c === CR && text.charCodeAt(i + 1) === LF) i++;
      start = i + 1;
    }
  }
  if (start < text.length) lines.push(text.slice(start));
  return lines;
}

/** Layer 3: the lines of one block into an event; null for comment-only or empty blocks. */
export function decodeEvent(lines: string[]): SseEvent | null {
  let event: string | null = null;
  const data: string[] = [];
  for (const line of lines) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  if (event === null && data.length === 0) return null;
  return { event, data: data.join('\n') };
}

const DATA_PREFIX = Buffer.from('data: ');

/**
 * The usual engine block, a single `data: …` line, kept as its bytes: a relay that only cuts and
 * forwards it never needs its text. `data` decodes the text on first use.
 */
export class DataBlockEvent implements SseEvent {
  readonly event = null;
  private text: string | null = null;

  constructor(readonly block: Buffer) {}

  get data(): string {
    this.text ??= this.block.toString('utf8', DATA_PREFIX.length, this.block.length - 2);
    return this.text;
  }
}

/** True for the `data: [DONE]` event, without decoding a block's text. */
export function isDone(ev: SseEvent): boolean {
  if (ev instanceof DataBlockEvent) return ev.block.equals(DONE_FRAME);
  return ev.data === '[DONE]';
}

/**
 * Layers 2 and 3 for one block. The usual engine block is a single `data: …` line: it becomes a
 * DataBlockEvent, the same event the general path would decode.
 */
export function decodeBlock(block: Buffer): SseEvent | null {
  const n = block.length;
  if (
    n >= 8 &&
    block[n - 1] === LF &&
    block.indexOf(LF) === n - 2 &&
    block.indexOf(CR) === -1 &&
    block.compare(DATA_PREFIX, 0, 6, 0, 6) === 0
  ) {
    return new DataBlockEvent(block);
  }
  return decodeEvent(blockLines(block));
}

/** All layers in push mode: engine chunks in, the events they complete out, synchronously. */
export class SseDecoder {
  private readonly splitter = new SseBlockSplitter();

  push(chunk: Uint8Array): SseEvent[] {
    const events: SseEvent[] = [];
    for (const block of this.splitter.push(chunk)) {
      const ev = decodeBlock(block);
      if (ev) events.push(ev);
    }
    return events;
  }

  /** At the end of the body: a final event without its blank line, if any. */
  flush(): SseEvent | null {
    const rest = this.splitter.flush();
    return rest ? decodeBlock(rest) : null;
  }
}

/** One outgoing frame. */
export const dataFrame = (json: string) => `data: ${json}\n\n`;
/** The stream's last frame, as the engine sends it and as the client gets it. */
export const DONE_FRAME = Buffer.from('data: [DONE]\n\n');
