// A lease batch sent while the journal's disk refuses writes (issue 40 item 8). A batch is sent
// only once its line is on disk, so that a batch Redis may have applied is only ever resent under
// its own id: were its records' lines in the file without it, a restart would send them again in a
// new batch, and charge them twice. While the disk is full that wait held delivered calls' charges
// back from Redis, and a crash then lost them. The wait is not needed when none of the batch's
// record lines has reached the file either: the batch line is moved ahead of them among the lines
// still to write, so whatever part of those lines ever lands, a record of the batch never lands
// without the batch before it (a restart resends it under the batch's own id, which Redis answers
// from its done key), and if none lands the charge is Redis's alone, made once.
import { type BatchLine, batchKey, type Line } from './journal-lines.ts';

/**
 * The unwritten lines `text` (whole lines, of which the first `done` bytes are in the file) with
 * batch `b`'s line moved ahead of its records' lines, or null when some record line of the batch
 * is not wholly among the bytes still to write (it may be in the file: the batch must wait).
 */
export function batchLineAhead(text: Buffer, done: number, b: BatchLine): Buffer | null {
  const seqs = new Set(b.seqs);
  const key = batchKey(b);
  let first = -1;
  let found = 0;
  let line: { start: number; end: number } | null = null;
  for (let start = 0; start < text.length; ) {
    const end = text.indexOf(0x0a, start) + 1;
    if (end === 0) return null; // not whole lines: never the case
    const l = JSON.parse(text.subarray(start, end - 1).toString()) as Line;
    if (l.t === 'r' && seqs.has(l.seq)) {
      if (first < 0) first = start;
      found++;
    } else if (l.t === 'b' && batchKey(l) === key) line = { start, end };
    start = end;
  }
  if (line === null || found !== seqs.size || first < done) return null;
  if (line.start < first) return text;
  return Buffer.concat([
    text.subarray(0, first),
    text.subarray(line.start, line.end),
    text.subarray(first, line.start),
    text.subarray(line.end),
  ]);
}
