// The settlement journal under the outbox (./outbox.ts): append-only files in the proxy's data
// directory, so a settlement the proxy owes survives its process. Three kinds of line, one JSON
// object each:
//   r  a call's settlement, written (write(2), no fsync) before the client gets its last byte: the
//      kernel keeps it if the process dies, so a delivered call is never forgotten;
//   b  a lease batch (which records, under which batch id), written and fsynced before the batch
//      is sent: a batch Redis may have applied is only ever resent under its own id;
//   a  records Redis acknowledged (not fsynced: a lost ack only means an idempotent resend).
// Lines are gathered in memory and written with one write(2) per event-loop turn (`afterWrite`
// runs a call's delivery once its line is in the file): a write per call cost the proxy ~40 µs of
// CPU per request on ext4, most of its overhead. Group fsync (`durable`) makes one fsync cover
// every line written before it, whoever asked.
//   p  a running stream's progress (issue 22): what it has delivered so far, as the settlement it
//      would be, written every PROXY_STREAM_PROGRESS_MS; a call that ends writes its r line (or x
//      when it ends with nothing to charge), and the progress no longer counts. A progress line
//      with neither after it is a stream its process died in: `open` turns it into a record, so a
//      crash loses at most one interval of delivered tokens. A segment holding a closed call's
//      progress keeps the segment of its closing line (a guard), so no replay finds the progress
//      alone.
// Files are segments (outbox-<n>.log); a segment is deleted once nothing in it is pending. At start
// `open` replays the segments a previous process left: what it had not seen acknowledged.
// A write that fails (a full disk: ENOSPC) never throws at the caller or crashes the process: the
// unwritten bytes stay in memory, in order, and are written again (on the next turn that writes,
// and every RETRY_MS) until the disk takes them. Meanwhile `writeFailure` says why, so Billing
// refuses new billable calls (their settlement could not be made crash-safe), and `durable()`
// waits: a lease batch is only sent once its line is on disk. A large segment holding nothing
// pending is dropped for a fresh one when a write fails — the journal that filled its disk frees it.
import {
  closeSync,
  existsSync,
  fsync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import {
  type BatchLine,
  batchKey,
  type Line,
  type Progress,
  type Replayed,
  SEGMENT,
  type SettleRecord,
} from './journal-lines.ts';
import { lockDir, unlockDir } from './journal-lock.ts';
import { readSegments } from './journal-replay.ts';

export type { BatchLine, Progress, Replayed, SettleRecord } from './journal-lines.ts';

/**
 * A full disk's own segment is dropped for a fresh one only when that frees this much: the journal
 * that filled its disk frees it; a small segment on a disk something else filled would only churn.
 */
const SELF_HEAL_BYTES = 32 * 1024;
/** How often a failed write is tried again when nothing else writes. */
const RETRY_MS = 250;

export class SettlementJournal {
  private fd: number;
  private segment: number;
  private size = 0;
  private seq: number;
  /** Per segment: records and batches in it that are not acknowledged yet. */
  private readonly pendingIn = new Map<number, number>();
  private readonly segmentOfRecord = new Map<number, number>();
  /** What each unacknowledged record owes (nano) and since when: the replica's report (./replica-report.ts). */
  private readonly owedOf = new Map<number, { accountId: string; cost: number; atMs: number }>();
  private readonly segmentOfBatch = new Map<string, number>();
  /** Running calls with a progress line: the segment of the latest, and what it charges. */
  private readonly segmentOfProgress = new Map<string, number>();
  private readonly progressOwed = new Map<string, { accountId: string; cost: number; atMs: number }>();
  /** Per segment: later segments it keeps (they hold the closing lines of its progress lines). */
  private readonly guards = new Map<number, number[]>();
  private dirty = false;
  /** Lines not written yet, and what waits for them to be (see afterWrite). */
  private buffered: string[] = [];
  private waiting: (() => void)[] = [];
  private writeScheduled = false;
  private syncing: Promise<void> | null = null;
  private nextSync: Promise<void> | null = null;
  private closed = false;
  /** Lines a failed write left (whole lines, oldest first): written before any other line. */
  private unwritten: Buffer | null = null;
  /** How much of `unwritten` is already in the current segment. */
  private unwrittenDone = 0;
  /** Records and batches whose lines are not in the file yet (their pins move if the segment does). */
  private bufferedPins: { seq: number | null; batch: string | null }[] = [];
  private failure: { since: number; error: Error } | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private writtenWaiters: (() => void)[] = [];
  private onWriteError: (err: Error) => void = () => {};
  private onWriteRecovered: () => void = () => {};

  private constructor(
    private readonly dir: string,
    private readonly segmentBytes: number,
    start: { segment: number; seq: number },
  ) {
    this.segment = start.segment;
    this.seq = start.seq;
    this.fd = this.openSegment(this.segment);
  }

  /**
   * Opens the journal in `dir` (created if missing), taking its lock, and reads what a previous
   * process left pending. Refuses a directory another live process (or app) is using.
   */
  static open(
    where: string,
    opts: { segmentBytes?: number; onWriteError?: (err: Error) => void; onWriteRecovered?: () => void } = {},
  ): { journal: SettlementJournal; replayed: Replayed } {
    const dir = resolve(where);
    mkdirSync(dir, { recursive: true });
    lockDir(dir);
    try {
      const segments = readdirSync(dir)
        .map((f) => SEGMENT.exec(f))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => Number(m[1]))
        .sort((a, b) => a - b);
      const read = readSegments(dir, segments);
      const journal = new SettlementJournal(dir, opts.segmentBytes ?? 8 * 1024 * 1024, {
        segment: (segments.at(-1) ?? 0) + 1,
        seq: read.maxSeq + 1,
      });
      journal.onWriteError = opts.onWriteError ?? (() => {});
      journal.onWriteRecovered = opts.onWriteRecovered ?? (() => {});
      for (const r of read.replayed.pending) {
        journal.pin(read.recordSegment.get(r.seq)!, r.seq, null);
        journal.owedOf.set(r.seq, { accountId: r.accountId, cost: r.cost, atMs: Date.now() });
      }
      for (const b of read.replayed.batches)
        journal.pin(read.batchSegment.get(batchKey(b))!, null, batchKey(b));
      // Streams a dead process was running: their last progress becomes their settlement, written
      // as a record here (before any old segment goes) and sent like the others.
      const pairs = [...read.closedPairs];
      for (const { progress, segment } of read.unclosed) {
        const rec = journal.record(progress);
        read.replayed.pending.push(rec);
        pairs.push({ p: segment, r: journal.segment });
      }
      journal.flush();
      if (journal.writeFailure !== null) throw journal.writeFailure.error;
      // A progress segment that stays keeps the segment of its call's closing line.
      pairs.sort((a, b) => a.p - b.p);
      for (const { p, r } of pairs) if (journal.pendingIn.has(p)) journal.guard(p, r);
      for (const s of segments) if (!journal.pendingIn.has(s)) unlinkSync(join(dir, `outbox-${s}.log`));
      return { journal, replayed: read.replayed };
    } catch (err) {
      unlockDir(dir);
      throw err;
    }
  }

  /** Records a call's settlement (written this event-loop turn); returns it with its sequence number. */
  record(r: Omit<SettleRecord, 'seq'>): SettleRecord {
    const rec: SettleRecord = {
      seq: this.seq++,
      accountId: r.accountId,
      leaseId: r.leaseId,
      holdId: r.holdId,
      cost: r.cost,
      carved: r.carved,
      usage: r.usage,
    };
    this.write({ t: 'r', ...rec });
    this.pin(this.segment, rec.seq, null);
    this.owedOf.set(rec.seq, { accountId: rec.accountId, cost: rec.cost, atMs: Date.now() });
    this.bufferedPins.push({ seq: rec.seq, batch: null });
    this.closeProgress(rec.holdId, false);
    return rec;
  }

  /** A running stream's charge so far: stands for its settlement if the process dies before it ends. */
  progress(p: Progress): void {
    if (this.closed) return;
    this.write({ t: 'p', ...p });
    const prev = this.segmentOfProgress.get(p.holdId);
    this.pin(this.segment, null, null);
    this.segmentOfProgress.set(p.holdId, this.segment);
    const first = this.progressOwed.get(p.holdId)?.atMs ?? Date.now();
    this.progressOwed.set(p.holdId, { accountId: p.accountId, cost: p.cost, atMs: first });
    if (prev !== undefined) this.unpin(prev);
  }

  /** The call ended without a settlement (nothing to charge): its progress no longer stands for it. */
  endProgress(holdId: string): void {
    if (this.closed) return;
    this.closeProgress(holdId, true);
  }

  private closeProgress(holdId: string, withLine: boolean): void {
    const p = this.segmentOfProgress.get(holdId);
    if (p === undefined) return;
    this.segmentOfProgress.delete(holdId);
    this.progressOwed.delete(holdId);
    if (withLine) this.write({ t: 'x', h: holdId });
    this.guard(p, this.segment);
    this.unpin(p);
  }

  /** Keeps segment `later` (a closing line) while segment `p` (the progress line) exists. */
  private guard(p: number, later: number): void {
    if (p === later) return;
    this.pin(later, null, null);
    const g = this.guards.get(p);
    if (g) g.push(later);
    else this.guards.set(p, [later]);
  }

  /** Segment `seg` is gone: the segments it kept may go too. */
  private dropped(seg: number): void {
    const g = this.guards.get(seg);
    if (g === undefined) return;
    this.guards.delete(seg);
    for (const later of g) this.unpin(later);
  }

  /** Writes a lease batch line now (after every line before it); call `durable()` before sending the batch. */
  batch(b: BatchLine): void {
    this.write({ t: 'b', ...b });
    this.pin(this.segment, null, batchKey(b));
    this.bufferedPins.push({ seq: null, batch: batchKey(b) });
    this.flush();
  }

  /**
   * Runs `then` once every line recorded so far is written to the file: at the end of this
   * event-loop turn, together with every other call that finished in it (one write(2) for all).
   */
  afterWrite(then?: () => void): void {
    if (then !== undefined) this.waiting.push(then);
    if (this.writeScheduled) return;
    this.writeScheduled = true;
    setImmediate(() => {
      this.writeScheduled = false;
      const waiting = this.waiting;
      this.waiting = [];
      // A failed write (a full disk) must not hold answers back: the settlements are still owed
      // from memory and sent to Redis; flush keeps the lines and writes them once it can.
      this.flush();
      for (const w of waiting) w();
    });
  }

  /** Redis acknowledged these records (and the batch that carried them, if any). */
  ack(seqs: readonly number[], batch?: { leaseId: string; batchId: string }): void {
    if (this.closed) return;
    const key = batch === undefined ? undefined : batchKey(batch);
    this.write(key === undefined ? { t: 'a', s: [...seqs] } : { t: 'a', s: [...seqs], b: key });
    this.afterWrite();
    for (const s of seqs) {
      const seg = this.segmentOfRecord.get(s);
      this.segmentOfRecord.delete(s);
      this.owedOf.delete(s);
      if (seg !== undefined) this.unpin(seg);
    }
    if (key !== undefined) {
      const seg = this.segmentOfBatch.get(key);
      this.segmentOfBatch.delete(key);
      if (seg !== undefined) this.unpin(seg);
    }
  }

  /**
   * Resolves when every line recorded before the call is on disk (one fsync serves many callers);
   * while the disk refuses writes, not before they are written.
   */
  async durable(): Promise<void> {
    this.flush();
    while (this.hasUnwritten() && !this.closed) await new Promise<void>((r) => this.writtenWaiters.push(r));
    return this.sync();
  }

  /** Why lines cannot be written now (a full disk), and since when; null while writes succeed. */
  get writeFailure(): { since: number; error: Error } | null {
    return this.failure;
  }

  private sync(): Promise<void> {
    if (this.syncing === null) return this.dirty ? this.startSync() : Promise.resolve();
    if (!this.dirty) return this.syncing;
    this.nextSync ??= this.syncing.then(
      () => this.startSync(),
      () => this.startSync(),
    );
    return this.nextSync;
  }

  /** Records not acknowledged yet. */
  get pendingRecords(): number {
    return this.segmentOfRecord.size;
  }

  /**
   * What the unacknowledged records owe, and the running streams at their last progress (what a
   * crash now would leave owed), per account (count, cost in nano), and the oldest's time.
   */
  owed(): {
    count: number;
    byAccount: Record<string, { count: number; nano: number }>;
    oldestAtMs: number | null;
  } {
    const byAccount: Record<string, { count: number; nano: number }> = {};
    let oldestAtMs: number | null = null;
    for (const o of [...this.owedOf.values(), ...this.progressOwed.values()]) {
      const a = byAccount[o.accountId] ?? { count: 0, nano: 0 };
      byAccount[o.accountId] = a;
      a.count++;
      a.nano += o.cost;
      if (oldestAtMs === null || o.atMs < oldestAtMs) oldestAtMs = o.atMs;
    }
    return { count: this.owedOf.size + this.progressOwed.size, byAccount, oldestAtMs };
  }

  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    for (const w of this.writtenWaiters.splice(0)) w();
    fsyncSync(this.fd);
    closeSync(this.fd);
    if (!this.pendingIn.has(this.segment)) unlinkSync(this.path(this.segment));
    unlockDir(this.dir);
  }

  private startSync(): Promise<void> {
    this.nextSync = null;
    this.dirty = false;
    const fd = this.fd;
    const p = new Promise<void>((resolve, reject) => {
      fsync(fd, (err) => {
        if (this.syncing === p) this.syncing = null;
        if (err) reject(err);
        else resolve();
      });
    });
    this.syncing = p;
    return p;
  }

  private write(line: Line): void {
    if (this.closed) throw new Error('the settlement journal is closed');
    this.buffered.push(JSON.stringify(line));
  }

  private hasUnwritten(): boolean {
    return this.unwritten !== null || this.buffered.length > 0;
  }

  /**
   * Writes the buffered lines (one write(2)); a segment grown past its size is rotated after. A
   * failed or short write keeps the lines not wholly written, to be written first next time.
   */
  private flush(): void {
    if (!this.hasUnwritten()) return;
    if (this.buffered.length > 0) {
      const text = Buffer.from(`${this.buffered.join('\n')}\n`);
      this.unwritten = this.unwritten === null ? text : Buffer.concat([this.unwritten, text]);
      this.buffered = [];
    }
    const lines = this.unwritten!;
    let n = 0;
    try {
      // Nothing else is written to the segment in between: what the disk took of `lines` before
      // is in the file, followed by exactly the rest.
      for (;;) {
        n = writeSync(this.fd, lines, this.unwrittenDone);
        if (n === 0)
          throw Object.assign(new Error('the disk took no byte of the journal lines'), { code: 'ENOSPC' });
        this.unwrittenDone += n;
        this.size += n;
        this.dirty = true;
        if (this.unwrittenDone === lines.length) break;
      }
    } catch (err) {
      this.failed(err as Error);
      return;
    }
    this.unwritten = null;
    this.unwrittenDone = 0;
    this.bufferedPins = [];
    if (this.failure !== null) this.recovered();
    if (this.size >= this.segmentBytes) {
      try {
        this.rotate();
      } catch {
        // no room for a new segment: this one grows, and rotation is tried at the next write
      }
    }
  }

  private failed(error: Error): void {
    if (this.failure === null) {
      this.failure = { since: Date.now(), error };
      this.onWriteError(error);
    }
    // Nothing pending in this segment but the unwritten lines' own records: it goes, and its space
    // with it, and those lines are written whole to a fresh segment (no torn line is left behind).
    const owedHere = (this.pendingIn.get(this.segment) ?? 0) - this.stillPinned().length;
    if (owedHere === 0 && this.size >= SELF_HEAL_BYTES) {
      try {
        this.startSegmentAfterFailure();
      } catch {
        // no room even for a new file: tried again with the write
      }
    }
    if (this.retryTimer === null && !this.closed) {
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null;
        this.flush();
      }, RETRY_MS);
      this.retryTimer.unref();
    }
  }

  private recovered(): void {
    this.failure = null;
    this.onWriteRecovered();
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    for (const w of this.writtenWaiters.splice(0)) w();
  }

  /** The unwritten lines' records and batches not acknowledged yet (those pin the segment). */
  private stillPinned(): { seq: number | null; batch: string | null }[] {
    return this.bufferedPins.filter((p) =>
      p.seq !== null
        ? this.segmentOfRecord.get(p.seq) === this.segment
        : this.segmentOfBatch.get(p.batch!) === this.segment,
    );
  }

  /** Moves the unwritten lines (and their records' pins) to a new segment; the old one goes. */
  private startSegmentAfterFailure(): void {
    const old = this.segment;
    const fd = this.openSegment(old + 1);
    closeSync(this.fd);
    this.fd = fd;
    this.segment = old + 1;
    this.size = 0;
    this.dirty = false;
    this.unwrittenDone = 0;
    for (const p of this.stillPinned()) {
      this.unpin(old);
      this.pin(this.segment, p.seq, p.batch);
    }
    this.bufferedPins = this.stillPinned();
    if (!this.pendingIn.has(old) && existsSync(this.path(old))) {
      unlinkSync(this.path(old));
      this.dropped(old);
    }
  }

  private rotate(): void {
    // The new segment opens first: if it cannot, the journal goes on in the old one.
    const fd = this.openSegment(this.segment + 1);
    fsyncSync(this.fd);
    closeSync(this.fd);
    const old = this.segment;
    this.segment++;
    this.size = 0;
    this.fd = fd;
    if (!this.pendingIn.has(old)) {
      unlinkSync(this.path(old));
      this.dropped(old);
    }
  }

  private pin(segment: number, seq: number | null, batch: string | null): void {
    this.pendingIn.set(segment, (this.pendingIn.get(segment) ?? 0) + 1);
    if (seq !== null) this.segmentOfRecord.set(seq, segment);
    if (batch !== null) this.segmentOfBatch.set(batch, segment);
  }

  private unpin(segment: number): void {
    const left = (this.pendingIn.get(segment) ?? 1) - 1;
    if (left > 0) {
      this.pendingIn.set(segment, left);
      return;
    }
    this.pendingIn.delete(segment);
    if (segment !== this.segment && existsSync(this.path(segment))) {
      unlinkSync(this.path(segment));
      this.dropped(segment);
    }
  }

  private openSegment(n: number): number {
    return openSync(this.path(n), 'a');
  }

  private path(n: number): string {
    return join(this.dir, `outbox-${n}.log`);
  }
}
