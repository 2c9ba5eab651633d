// What each segment of the settlement journal (./settlement-journal.ts) still holds that is owed,
// and so which segments may go: pure bookkeeping, no file (the journal does the I/O and deletes
// the segments this book frees, as CreditLeases does the Redis side of ./lease-book.ts).
// A segment is pinned once by every line in it that still counts:
// - a settlement record, until Redis acknowledges it;
// - a lease batch, until Redis acknowledges it (resent under its own id only while its line exists);
// - a running stream's latest progress line, until a later one or the call's closing line;
// - a guard: a progress segment that stays keeps the segment of that call's closing line (an r or x
//   line), so no replay ever finds the progress alone and charges a call that already settled.
// A segment with no pin left is freed, unless it is the one being written. Every method that can
// free segments returns them; the journal removes their files.
//
// The book also knows which records and batches are in lines not written to the file yet: on a
// full disk those lines may be moved whole to a fresh segment, and their pins move with them.

/** What one owed line stands for: the replica's report (./replica-reporter.ts). */
export interface Owed {
  accountId: string;
  /** nano */
  cost: number;
  atMs: number;
}

/** How many owed settlements of one account, and their cost (nano). */
interface ByAccount {
  count: number;
  nano: number;
}

/** A record (its seq) or a batch (its key) whose line is not in the file yet. */
interface Unwritten {
  seq: number | null;
  batch: string | null;
}

export class SegmentBook {
  /** Per segment: the pins on it. */
  private readonly pendingIn = new Map<number, number>();
  private readonly segmentOfRecord = new Map<number, number>();
  /** What each unacknowledged record owes and since when. */
  private readonly owedOf = new Map<number, Owed>();
  private readonly segmentOfBatch = new Map<string, number>();
  /** Running calls with a progress line: the segment of the latest, and what it charges. */
  private readonly segmentOfProgress = new Map<string, number>();
  private readonly progressOwed = new Map<string, Owed>();
  /** Per segment: later segments it keeps (they hold the closing lines of its progress lines). */
  private readonly guards = new Map<number, number[]>();
  private unwritten: Unwritten[] = [];

  /** `current`: the segment lines are written to (never freed while it is). */
  constructor(public current: number) {}

  /** A record a previous process left unacknowledged, in segment `segment`. */
  replayedRecord(seq: number, segment: number, owed: Owed): void {
    this.pin(segment, seq, null);
    this.owedOf.set(seq, owed);
  }

  /** A batch a previous process left unacknowledged, in segment `segment`. */
  replayedBatch(key: string, segment: number): void {
    this.pin(segment, null, key);
  }

  /** Whether any line in `segment` still counts. */
  holds(segment: number): boolean {
    return this.pendingIn.has(segment);
  }

  /** A settlement record written now (it closes its call's progress, if any). */
  record(seq: number, holdId: string, owed: Owed): number[] {
    this.pin(this.current, seq, null);
    this.owedOf.set(seq, owed);
    this.unwritten.push({ seq, batch: null });
    return this.closeProgress(holdId) ?? [];
  }

  /** A lease batch written now. */
  batch(key: string): void {
    this.pin(this.current, null, key);
    this.unwritten.push({ seq: null, batch: key });
  }

  /** A running call's progress written now: the one before it no longer counts. */
  progress(holdId: string, owed: Omit<Owed, 'atMs'>, now: number): number[] {
    const prev = this.segmentOfProgress.get(holdId);
    this.pin(this.current, null, null);
    this.segmentOfProgress.set(holdId, this.current);
    const first = this.progressOwed.get(holdId)?.atMs ?? now;
    this.progressOwed.set(holdId, { ...owed, atMs: first });
    const freed: number[] = [];
    if (prev !== undefined) this.unpin(prev, freed);
    return freed;
  }

  /** The call's closing line is written now: null when it had no progress (nothing to close). */
  closeProgress(holdId: string): number[] | null {
    const p = this.segmentOfProgress.get(holdId);
    if (p === undefined) return null;
    this.segmentOfProgress.delete(holdId);
    this.progressOwed.delete(holdId);
    this.guard(p, this.current);
    const freed: number[] = [];
    this.unpin(p, freed);
    return freed;
  }

  /** Keeps segment `later` (a closing line) while segment `p` (the progress line) is kept. */
  guard(p: number, later: number): void {
    if (p === later) return;
    this.pin(later, null, null);
    const g = this.guards.get(p);
    if (g) g.push(later);
    else this.guards.set(p, [later]);
  }

  /** Redis acknowledged these records (and the batch that carried them). */
  ack(seqs: readonly number[], batchKey?: string): number[] {
    const freed: number[] = [];
    for (const s of seqs) {
      const seg = this.segmentOfRecord.get(s);
      this.segmentOfRecord.delete(s);
      this.owedOf.delete(s);
      if (seg !== undefined) this.unpin(seg, freed);
    }
    if (batchKey !== undefined) {
      const seg = this.segmentOfBatch.get(batchKey);
      this.segmentOfBatch.delete(batchKey);
      if (seg !== undefined) this.unpin(seg, freed);
    }
    return freed;
  }

  /** Records in lines not written yet that Redis has not acknowledged: owed from memory alone. */
  unwrittenOwed(): number[] {
    const owed: number[] = [];
    for (const { seq } of this.unwritten) if (seq !== null && this.segmentOfRecord.has(seq)) owed.push(seq);
    return owed;
  }

  /** Every line so far is in the file. */
  written(): void {
    this.unwritten = [];
  }

  /** Lines go to segment `next` now; the one before is freed if nothing in it counts. */
  rotated(next: number): number[] {
    const old = this.current;
    this.current = next;
    const freed: number[] = [];
    if (!this.pendingIn.has(old)) this.drop(old, freed);
    return freed;
  }

  /** Whether nothing in the current segment counts but the unwritten lines' own records and batches. */
  holdsOnlyUnwritten(): boolean {
    return (this.pendingIn.get(this.current) ?? 0) - this.unwrittenIn(this.current).length === 0;
  }

  /**
   * The unwritten lines go whole to segment `next` (a full disk: the current one is given up), and
   * the pins of their records and batches still in the current segment with them.
   */
  movedUnwritten(next: number): number[] {
    const old = this.current;
    // Read before the segment changes: these are the pins on the old one.
    const moving = this.unwrittenIn(old);
    this.current = next;
    const freed: number[] = [];
    for (const p of moving) {
      this.unpin(old, freed);
      this.pin(next, p.seq, p.batch);
    }
    this.unwritten = moving;
    if (!this.pendingIn.has(old) && !freed.includes(old)) this.drop(old, freed);
    return freed;
  }

  /** Records not acknowledged yet. */
  get pendingRecords(): number {
    return this.segmentOfRecord.size;
  }

  /**
   * What the unacknowledged records owe, and the running streams at their last progress (what a
   * crash now would leave owed), per account (count, cost in nano), and the oldest's time. Records
   * whose lines are not in the file yet are `unanswered` instead: their calls wait for the line or
   * for Redis (./settlement-journal.ts afterWrite), so a crash now leaves them owing nothing.
   */
  owed(): {
    count: number;
    byAccount: Record<string, ByAccount>;
    oldestAtMs: number | null;
    unanswered: { count: number; byAccount: Record<string, ByAccount> };
  } {
    const unwritten = new Set(this.unwrittenOwed());
    const byAccount: Record<string, ByAccount> = {};
    const unanswered: Record<string, ByAccount> = {};
    let oldestAtMs: number | null = null;
    const add = (to: Record<string, ByAccount>, o: Owed) => {
      const a = to[o.accountId] ?? { count: 0, nano: 0 };
      to[o.accountId] = a;
      a.count++;
      a.nano += o.cost;
    };
    for (const [seq, o] of this.owedOf)
      if (unwritten.has(seq)) add(unanswered, o);
      else {
        add(byAccount, o);
        if (oldestAtMs === null || o.atMs < oldestAtMs) oldestAtMs = o.atMs;
      }
    for (const o of this.progressOwed.values()) {
      add(byAccount, o);
      if (oldestAtMs === null || o.atMs < oldestAtMs) oldestAtMs = o.atMs;
    }
    return {
      count: this.owedOf.size - unwritten.size + this.progressOwed.size,
      byAccount,
      oldestAtMs,
      unanswered: { count: unwritten.size, byAccount: unanswered },
    };
  }

  /** The unwritten lines' records and batches not acknowledged yet whose pin is on `segment`. */
  private unwrittenIn(segment: number): Unwritten[] {
    return this.unwritten.filter((p) =>
      p.seq !== null
        ? this.segmentOfRecord.get(p.seq) === segment
        : this.segmentOfBatch.get(p.batch!) === segment,
    );
  }

  private pin(segment: number, seq: number | null, batch: string | null): void {
    this.pendingIn.set(segment, (this.pendingIn.get(segment) ?? 0) + 1);
    if (seq !== null) this.segmentOfRecord.set(seq, segment);
    if (batch !== null) this.segmentOfBatch.set(batch, segment);
  }

  private unpin(segment: number, freed: number[]): void {
    const left = (this.pendingIn.get(segment) ?? 1) - 1;
    if (left > 0) {
      this.pendingIn.set(segment, left);
      return;
    }
    this.pendingIn.delete(segment);
    if (segment !== this.current) this.drop(segment, freed);
  }

  /** Segment `seg` goes: the segments it kept may go too. */
  private drop(seg: number, freed: number[]): void {
    freed.push(seg);
    const g = this.guards.get(seg);
    if (g === undefined) return;
    this.guards.delete(seg);
    for (const later of g) this.unpin(later, freed);
  }
}
