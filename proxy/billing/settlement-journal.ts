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
// CPU per request on ext4, most of its overhead. Group fsync (`durable`, ./group-fsync.ts) makes
// one fsync cover every line written before it, whoever asked.
//   p  a running stream's progress (issue 22): what it has delivered so far, as the settlement it
//      would be, written every PROXY_STREAM_PROGRESS_MS; a call that ends writes its r line (or x
//      when it ends with nothing to charge), and the progress no longer counts. A progress line
//      with neither after it is a stream its process died in: `open` turns it into a record, so a
//      crash loses at most one interval of delivered tokens.
// Files are segments (outbox-<n>.log); a segment is deleted once nothing in it is pending (which
// lines pin which segment is ./segment-book.ts, pure). At start `open` replays the segments a
// previous process left: what it had not seen acknowledged.
// A write that fails (a full disk: ENOSPC) never throws at the caller or crashes the process: the
// unwritten bytes stay in memory, in order, and are written again (on the next turn that writes,
// and every RETRY_MS) until the disk takes them. Meanwhile `writeFailure` says why, so Billing
// refuses new billable calls (their settlement could not be made crash-safe), and Redis is the only
// place a running call's charge can be made durable (issue 47): `afterWrite` holds a call's answer
// until its record is written or Redis acknowledged it, and `batchDurable` says a batch cannot wait
// for its line — it is sent at once, each record exactly once by its hold id (the outbox's
// per-record mode), since the disk may take its records' lines and never the batch's. A large
// segment holding nothing pending is dropped for a fresh one when a write fails — the journal that
// filled its disk frees it.
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { GroupFsync } from './group-fsync.ts';
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
import { SegmentBook } from './segment-book.ts';
import { setAsideTornTail, type TornTail } from './torn-tail.ts';

export type { BatchLine, Progress, Replayed, SettleRecord } from './journal-lines.ts';

/**
 * An answer waiting for its settlement: `then` runs once record `own` is safe (in the file, or
 * acknowledged by Redis) — or, for a waiter that names none (`own` undefined), every record before
 * seq `upTo`; `own` null: the call has no record, nothing to wait for past this turn's write.
 */
interface Waiter {
  upTo: number;
  own: number | null | undefined;
  then: () => void;
}

/**
 * A full disk's own segment is dropped for a fresh one only when that frees this much: the journal
 * that filled its disk frees it; a small segment on a disk something else filled would only churn.
 */
const SELF_HEAL_BYTES = 32 * 1024;
/** How often a failed write is tried again when nothing else writes. */
const RETRY_MS = 250;

export class SettlementJournal {
  private fd: number;
  private size = 0;
  private seq: number;
  /** What each segment holds that is still owed, and so which may go (./segment-book.ts). */
  private readonly book: SegmentBook;
  private readonly fsync = new GroupFsync(() => this.fd);
  /** Lines not written yet, and what waits for them to be (see afterWrite): after which record. */
  private buffered: string[] = [];
  private waiting: Waiter[] = [];
  /** Waiters a failed write held back until their records are safe (releaseHeld). */
  private held: Waiter[] = [];
  private writeScheduled = false;
  private closed = false;
  /** Lines a failed write left (whole lines, oldest first): written before any other line. */
  private unwritten: Buffer | null = null;
  /** How much of `unwritten` is already in the current segment. */
  private unwrittenDone = 0;
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
    this.book = new SegmentBook(start.segment);
    this.seq = start.seq;
    this.fd = this.openSegment(this.segment);
  }

  /**
   * Opens the journal in `dir` (created if missing), taking its lock, and reads what a previous
   * process left pending. Refuses a directory another live process (or app) is using.
   */
  static open(
    where: string,
    opts: {
      segmentBytes?: number;
      onWriteError?: (err: Error) => void;
      onWriteRecovered?: () => void;
      /** A torn last line was set aside (./torn-tail.ts). */
      onTornTail?: (t: TornTail) => void;
    } = {},
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
      if (read.torn !== null) opts.onTornTail?.(setAsideTornTail(dir, read.torn));
      const journal = new SettlementJournal(dir, opts.segmentBytes ?? 8 * 1024 * 1024, {
        segment: (segments.at(-1) ?? 0) + 1,
        seq: read.maxSeq + 1,
      });
      journal.onWriteError = opts.onWriteError ?? (() => {});
      journal.onWriteRecovered = opts.onWriteRecovered ?? (() => {});
      const { book } = journal;
      for (const r of read.replayed.pending)
        book.replayedRecord(r.seq, read.recordSegment.get(r.seq)!, {
          accountId: r.accountId,
          cost: r.cost,
          atMs: Date.now(),
        });
      for (const b of read.replayed.batches)
        book.replayedBatch(batchKey(b), read.batchSegment.get(batchKey(b))!);
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
      for (const { p, r } of pairs) if (book.holds(p)) book.guard(p, r);
      for (const s of segments) if (!book.holds(s)) unlinkSync(join(dir, `outbox-${s}.log`));
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
    this.remove(
      this.book.record(rec.seq, rec.holdId, { accountId: rec.accountId, cost: rec.cost, atMs: Date.now() }),
    );
    return rec;
  }

  /** A running stream's charge so far: stands for its settlement if the process dies before it ends. */
  progress(p: Progress): void {
    if (this.closed) return;
    this.write({ t: 'p', ...p });
    this.remove(this.book.progress(p.holdId, { accountId: p.accountId, cost: p.cost }, Date.now()));
  }

  /** The call ended without a settlement (nothing to charge): its progress no longer stands for it. */
  endProgress(holdId: string): void {
    if (this.closed) return;
    const freed = this.book.closeProgress(holdId);
    if (freed === null) return;
    this.write({ t: 'x', h: holdId });
    this.remove(freed);
  }

  /** Writes a lease batch line now (after every line before it); `batchDurable()` says how it may go. */
  batch(b: BatchLine): void {
    this.write({ t: 'b', ...b });
    this.book.batch(batchKey(b));
    this.flush();
  }

  /**
   * Runs `then` once every line recorded so far is written to the file: at the end of this
   * event-loop turn, together with every other call that finished in it (one write(2) for all).
   * While the disk refuses the lines, once the call's record (`record`; when not named, every record
   * so far) is written or acknowledged by Redis instead: a call is never answered while its charge
   * exists only in this process.
   */
  afterWrite(then?: () => void, record?: number | null): void {
    if (then !== undefined) this.waiting.push({ upTo: this.seq, own: record, then });
    if (this.writeScheduled) return;
    this.writeScheduled = true;
    setImmediate(() => {
      this.writeScheduled = false;
      this.held.push(...this.waiting);
      this.waiting = [];
      this.flush();
      this.releaseHeld();
    });
  }

  /** Redis acknowledged these records (and the batch that carried them, if any). */
  ack(seqs: readonly number[], batch?: { leaseId: string; batchId: string }): void {
    if (this.closed) return;
    const key = batch === undefined ? undefined : batchKey(batch);
    this.write(key === undefined ? { t: 'a', s: [...seqs] } : { t: 'a', s: [...seqs], b: key });
    // Its turn's write also answers the calls held back for these records (releaseHeld).
    this.afterWrite();
    this.remove(this.book.ack(seqs, key));
  }

  /**
   * Resolves when every line recorded before the call is on disk (one fsync serves many callers);
   * while the disk refuses writes, not before they are written.
   */
  async durable(): Promise<void> {
    this.flush();
    while (this.hasUnwritten() && !this.closed) await new Promise<void>((r) => this.writtenWaiters.push(r));
    return this.fsync.sync();
  }

  /**
   * Whether the batch just written (`batch`) is on disk: true once an fsync covered its line; false
   * at once while the disk refuses writes (or the fsync failed) — the batch is then sent without
   * waiting, in the per-record mode its lost line calls for (./outbox.ts settleBatch).
   */
  async batchDurable(): Promise<boolean> {
    this.flush();
    if (this.failure !== null) return false;
    return this.fsync.sync().then(
      () => true,
      () => false,
    );
  }

  /** Why lines cannot be written now (a full disk), and since when; null while writes succeed. */
  get writeFailure(): { since: number; error: Error } | null {
    return this.failure;
  }

  /** Records not acknowledged yet. */
  get pendingRecords(): number {
    return this.book.pendingRecords;
  }

  /** Records not acknowledged whose lines the disk has not taken yet: owed from memory alone. */
  get unwrittenRecords(): number {
    return this.book.unwrittenOwed().length;
  }

  /** What is owed now, per account (./segment-book.ts `owed`): the replica's report. */
  owed(): ReturnType<SegmentBook['owed']> {
    return this.book.owed();
  }

  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    for (const w of this.writtenWaiters.splice(0)) w();
    fsyncSync(this.fd);
    closeSync(this.fd);
    if (!this.book.holds(this.segment)) unlinkSync(this.path(this.segment));
    unlockDir(this.dir);
  }

  private write(line: Line): void {
    if (this.closed) throw new Error('the settlement journal is closed');
    this.buffered.push(JSON.stringify(line));
  }

  /**
   * Runs the held waiters whose records are all safe: in the file, or acknowledged by Redis. Those
   * still held when the journal closes are never run: their charge is lost with the process, so
   * their calls must not be answered.
   */
  private releaseHeld(): void {
    if (this.held.length === 0) return;
    const unsafe = this.book.unwrittenOwed();
    let go = this.held;
    if (unsafe.length > 0) {
      const owedFrom = Math.min(...unsafe);
      const owed = new Set(unsafe);
      const safe = (w: Waiter) =>
        w.own === undefined ? w.upTo <= owedFrom : w.own === null || !owed.has(w.own);
      go = this.held.filter(safe);
      this.held = this.held.filter((w) => !safe(w));
    } else this.held = [];
    for (const w of go) w.then();
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
        this.fsync.wrote();
        if (this.unwrittenDone === lines.length) break;
      }
    } catch (err) {
      this.failed(err as Error);
      return;
    }
    this.unwritten = null;
    this.unwrittenDone = 0;
    this.book.written();
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
    if (this.book.holdsOnlyUnwritten() && this.size >= SELF_HEAL_BYTES) {
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
    this.releaseHeld();
  }

  /** Moves the unwritten lines (and their records' pins) to a new segment; the old one goes. */
  private startSegmentAfterFailure(): void {
    const next = this.segment + 1;
    const fd = this.openSegment(next);
    closeSync(this.fd);
    this.fd = fd;
    this.size = 0;
    this.fsync.fresh();
    this.unwrittenDone = 0;
    this.remove(this.book.movedUnwritten(next));
  }

  private rotate(): void {
    // The new segment opens first: if it cannot, the journal goes on in the old one.
    const next = this.segment + 1;
    const fd = this.openSegment(next);
    fsyncSync(this.fd);
    closeSync(this.fd);
    this.size = 0;
    this.fd = fd;
    this.remove(this.book.rotated(next));
  }

  /** The segment lines are written to now. */
  private get segment(): number {
    return this.book.current;
  }

  /** Deletes the files of segments the book freed. */
  private remove(freed: readonly number[]): void {
    for (const seg of freed) if (existsSync(this.path(seg))) unlinkSync(this.path(seg));
  }

  private openSegment(n: number): number {
    return openSync(this.path(n), 'a');
  }

  private path(n: number): string {
    return join(this.dir, `outbox-${n}.log`);
  }
}
