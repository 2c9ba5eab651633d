// A torn tail of the settlement journal (./journal-replay.ts): the bytes after the last newline of
// the last segment, which do not parse — a crash mid-write, or a write the disk took only part of
// before the process died. They are moved out of the segment into `outbox-<n>.torn` beside it
// (kept, for a person to read: a torn line is one a full disk took in part, and its call was answered
// only once Redis had its charge — ./settlement-journal.ts afterWrite), so the segment ends with a
// whole line again. Left in place, the tail would stop the
// next start but one: once a newer segment exists, a line that does not parse is no longer a tail.
import { appendFileSync, readFileSync, truncateSync } from 'node:fs';
import { join } from 'node:path';

export interface TornTail {
  /** The segment file it was cut from. */
  file: string;
  /** Where its bytes were put. */
  setAside: string;
  bytes: number;
}

export function setAsideTornTail(dir: string, torn: { segment: number; file: string }): TornTail {
  const content = readFileSync(torn.file);
  const cut = content.lastIndexOf(0x0a) + 1;
  const setAside = join(dir, `outbox-${torn.segment}.torn`);
  appendFileSync(setAside, Buffer.concat([content.subarray(cut), Buffer.from('\n')]));
  truncateSync(torn.file, cut);
  return { file: torn.file, setAside, bytes: content.length - cut };
}
