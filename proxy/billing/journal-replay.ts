// Reading a journal a previous process left (./settlement-journal.ts): what it had not seen acknowledged, and
// which segment holds what, so the new process pins and drops segments as the old one would have.
// A line cut short by a crash mid-write (or a write the disk refused in part) can only be the last
// line of the last segment, with no newline after it: that torn tail is set aside (./torn-tail.ts)
// so the next start, when the segment is no longer the last, does not take it for damage. A line
// that does not parse anywhere else is damage, and stops the start: it may hold charges owed.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type BatchLine, batchKey, type Line, type Progress, type SettleRecord } from './journal-lines.ts';

export function readSegments(dir: string, segments: number[]) {
  const records = new Map<number, SettleRecord>();
  const recordSegment = new Map<number, number>();
  const batches = new Map<string, BatchLine>();
  const batchSegment = new Map<string, number>();
  const acked = new Set<number>();
  const ackedBatches = new Set<string>();
  const progress = new Map<string, { progress: Progress; segment: number }>();
  const closedIn = new Map<string, number>();
  let maxSeq = 0;
  /** The torn last line of the last segment, if any. */
  let torn: { segment: number; file: string } | null = null;
  for (const seg of segments) {
    const file = join(dir, `outbox-${seg}.log`);
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((text, i) => {
      if (text === '') return;
      let line: Line;
      try {
        line = JSON.parse(text) as Line;
      } catch (err) {
        // A line cut short by a crash mid-write can only be the last one of the last segment.
        if (seg === segments.at(-1) && i === lines.length - 1) {
          torn = { segment: seg, file };
          return;
        }
        throw new Error(`settlement journal ${file} line ${i + 1} is unreadable; it holds charges owed`, {
          cause: err,
        });
      }
      if (line.t === 'p') {
        const { t: _, ...p } = line;
        progress.set(p.holdId, { progress: p, segment: seg });
      } else if (line.t === 'x') {
        closedIn.set(line.h, seg);
      } else if (line.t === 'r') {
        const { t: _, ...rec } = line;
        records.set(rec.seq, rec);
        recordSegment.set(rec.seq, seg);
        closedIn.set(rec.holdId, seg);
        maxSeq = Math.max(maxSeq, rec.seq);
      } else if (line.t === 'b') {
        const { t: _, ...b } = line;
        batches.set(batchKey(b), b);
        batchSegment.set(batchKey(b), seg);
      } else {
        for (const s of line.s) acked.add(s);
        if (line.b !== undefined) ackedBatches.add(line.b);
      }
    });
  }
  const pending = [...records.values()].filter((r) => !acked.has(r.seq)).sort((a, b) => a.seq - b.seq);
  const pendingSeqs = new Set(pending.map((r) => r.seq));
  const open = [...batches.entries()]
    .filter(([key, b]) => !ackedBatches.has(key) && b.seqs.some((s) => pendingSeqs.has(s)))
    .map(([, b]) => b);
  const unclosed = [...progress.values()].filter((p) => !closedIn.has(p.progress.holdId));
  const closedPairs = [...progress.values()]
    .filter((p) => closedIn.has(p.progress.holdId))
    .map((p) => ({ p: p.segment, r: closedIn.get(p.progress.holdId)! }));
  return {
    replayed: { pending, batches: open },
    recordSegment,
    batchSegment,
    maxSeq,
    unclosed,
    closedPairs,
    torn: torn as { segment: number; file: string } | null,
  };
}
