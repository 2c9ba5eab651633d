// This replica's credit leases (DESIGN "Money", "Latency"): per account, a slice of credit held
// in Redis as one ordinary hold, from which requests carve their holds synchronously — no Redis
// round trip before the first byte. Finished requests are settled against the lease in batches
// (one settleBatch script per account per tick), exactly once per batch, through the outbox
// (./outbox.ts: journaled, resent until acknowledged). Leases grow in the background when they run
// low (sized from recent demand, at most 1/8 of what the account has and at most PROXY_LEASE_MAX),
// are renewed while held (every ttl/3) and are given back when idle, when another replica near the
// account's limit asks (./lease-reclaim.ts) and on shutdown. A request the lease cannot cover takes
// the exact reserve-first path (CallCharge), so near the limit nothing changes.
import type { LeaseMetering, Voided } from '../../core/billing/index.ts';
import { newId } from '../../core/ids.ts';
import { AccountLease, type LeasePolicy, type LeaseRecord, leasePart } from './lease-book.ts';
import type { Outbox } from './outbox.ts';

export interface CreditLeasesOptions {
  /** Extensions and releases (the request path's connection). */
  leases: LeaseMetering;
  /** Settle batches go through the outbox. */
  outbox: Outbox;
  /** Lease ttl (Redis time): the lease of a replica that dies is voided this long after its last renewal. */
  ttlMs: number;
  /** Largest lease per account (nano). */
  maxLease: number;
  /** A lease unused this long is given back. */
  idleMs: number;
  /** A lease is at most 1/den of what the account has outside other holds. */
  den?: number;
  /** Settles wait at most this long to share a batch… */
  flushMs?: number;
  /** …or until this many are queued. */
  flushMax?: number;
  onError: (err: unknown, what: string) => void;
  /** The account's available balance after an extension (feeds BalanceView). */
  onAvailable?: (accountId: string, available: number) => void;
  /** Expired holds an extension voided on its way (their owners are gone). */
  onVoided?: (v: Voided) => void;
}

const NO_GROW_BACKOFF_MS = 250;

export class CreditLeases {
  /** The lease's hold id in every account this replica leases from. */
  readonly leaseId = newId('lease');
  private readonly books = new Map<string, AccountLease>();
  private readonly dirty = new Set<AccountLease>();
  private readonly policy: LeasePolicy;
  private readonly den: number;
  private readonly flushMs: number;
  private readonly flushMax: number;
  private flushTimer: NodeJS.Timeout | null = null;
  private readonly idleTimer: NodeJS.Timeout;
  private closed = false;
  /** Batch ids: a count, unique within this replica's lease id, so two batches never share one. */
  private batchSeq = 0;

  constructor(private readonly o: CreditLeasesOptions) {
    this.policy = { maxLease: o.maxLease, targetHolds: 64, minHolds: 4 };
    this.den = o.den ?? 8;
    this.flushMs = o.flushMs ?? 10;
    this.flushMax = o.flushMax ?? 64;
    this.idleTimer = setInterval(() => this.releaseIdle(false), Math.max(20, Math.floor(o.idleMs / 2)));
    this.idleTimer.unref();
  }

  /** Carves `amount` for a request from the account's lease; false when the lease cannot cover it. */
  tryCarve(accountId: string, amount: number): boolean {
    if (this.closed) return false;
    let b = this.books.get(accountId);
    if (b === undefined) {
      b = new AccountLease(accountId);
      this.books.set(accountId, b);
    }
    const now = Date.now();
    b.noteDemand(amount, now);
    const ok = b.carve(amount);
    if (b.wantsGrowth(this.policy, now)) this.extend(b);
    return ok;
  }

  /** A carved request that generated nothing: its hold goes back to the lease. */
  uncarve(accountId: string, amount: number): void {
    this.books.get(accountId)?.uncarve(amount);
  }

  /**
   * A carved request was delivered: its settlement is journaled now (before the caller sends the
   * last byte) and queued for the account's next batch. Returns its record's seq.
   */
  settle(
    accountId: string,
    r: {
      holdId: string;
      carved: number;
      cost: number;
      usage: LeaseRecord['usage'];
      onCharged?: LeaseRecord['onCharged'];
    },
  ): number {
    const b = this.books.get(accountId);
    if (b === undefined) throw new Error(`no lease book for ${accountId}: settle without a carve`);
    const rec = this.o.outbox.recordLeased({
      accountId,
      leaseId: this.leaseId,
      holdId: r.holdId,
      cost: r.cost,
      carved: r.carved,
      usage: r.usage,
    });
    b.enqueue(r.onCharged === undefined ? rec : { ...rec, onCharged: r.onCharged });
    if (b.queue.length >= this.flushMax) void this.flush(b);
    else {
      this.dirty.add(b);
      this.flushTimer ??= setTimeout(() => this.flushDirty(), this.flushMs);
    }
    return rec.seq;
  }

  /** Money the lease holds that no request uses. */
  freeOf(accountId: string): number {
    return Math.max(0, this.books.get(accountId)?.free ?? 0);
  }

  /** Near the limit: give the lease's unused money back so an exact reserve can use it. */
  shrink(accountId: string): Promise<void> {
    const b = this.books.get(accountId);
    if (b === undefined) return Promise.resolve();
    b.noGrowUntil = Date.now() + NO_GROW_BACKOFF_MS;
    return this.release(b);
  }

  /** Lands every queued settle and keeps the leases (tests read a balance that no settle will move). */
  async flushAll(): Promise<void> {
    await Promise.all([...this.books.values()].map((b) => this.run(b, () => this.flushNow(b, true))));
  }

  /** Flushes every queued settle and gives back every lease's unused money (tests, shutdown). */
  async quiesce(): Promise<void> {
    await this.releaseIdle(true);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.idleTimer);
    await this.quiesce();
    if (this.flushTimer) clearTimeout(this.flushTimer);
  }

  private releaseIdle(all: boolean): Promise<void> {
    const now = Date.now();
    const work: Promise<void>[] = [];
    for (const b of this.books.values()) {
      if (all || (now - b.lastUsed >= this.o.idleMs && b.idle)) work.push(this.release(b));
      // A lease carrying only long streams is renewed too: only a dead replica's lease may expire.
      else if (b.size > 0 && now - b.renewedAt > this.o.ttlMs / 3) this.extend(b, true);
    }
    return Promise.all(work).then(() => {});
  }

  private run(b: AccountLease, op: () => Promise<void>): Promise<void> {
    const p = b.chain.then(op).catch((err) => this.o.onError(err, 'lease'));
    b.chain = p;
    return p;
  }

  private extend(b: AccountLease, renewOnly = false): void {
    if (b.extending) return;
    b.extending = true;
    void this.run(b, async () => {
      try {
        const { add, min } = renewOnly ? { add: 0, min: 0 } : b.growth(this.policy);
        if (add <= 0 && !renewOnly) return;
        b.unsure = true;
        const r = await this.o.leases.extendLease({
          accountId: b.accountId,
          leaseId: this.leaseId,
          add,
          min,
          den: this.den,
          ttlMs: this.o.ttlMs,
        });
        // Settles applied meanwhile were subtracted from queuedCost when their batch returned, and
        // this reply is the lease after all of them (operations of one lease are serialised).
        b.size = r.leaseHeld;
        b.unsure = false;
        b.renewedAt = Date.now();
        if (r.grown === 0 && !renewOnly) b.noGrowUntil = Date.now() + NO_GROW_BACKOFF_MS;
        this.o.onAvailable?.(b.accountId, r.available);
        this.o.onVoided?.(r.voided);
      } finally {
        b.extending = false;
      }
    });
  }

  private flushDirty(): void {
    this.flushTimer = null;
    for (const b of this.dirty) this.flush(b);
    this.dirty.clear();
  }

  private flush(b: AccountLease): Promise<void> {
    if (b.flushQueued) return b.chain;
    b.flushQueued = true;
    return this.run(b, () => this.flushNow(b, false));
  }

  /**
   * Settles what is queued now (`drain`: until the queue stays empty). A flush leaves the settles
   * that arrive during its round trip to the next tick or to flushMax: draining them at once sent
   * a batch per round trip under load (~27 records, not 64), each a script call with a fixed cost.
   * The outbox resends a batch until Redis acknowledges it, so this waits through an outage; the
   * lease's queued cost keeps its free money down meanwhile, which is the right backpressure.
   */
  private async flushNow(b: AccountLease, drain: boolean): Promise<void> {
    b.flushQueued = false;
    let left = drain ? Number.POSITIVE_INFINITY : b.queue.length;
    while (b.queue.length > 0 && left > 0) {
      // Each record leaves the queue once, in one batch, so the batch id is its exactly-once key.
      const batch = b.queue.splice(0, Math.min(256, left));
      left -= batch.length;
      let leased = 0;
      for (const r of batch) leased += leasePart(r);
      try {
        const res = await this.o.outbox.settleBatch({
          accountId: b.accountId,
          leaseId: this.leaseId,
          batchId: String(++this.batchSeq),
          ttlMs: this.o.ttlMs,
          records: batch,
        });
        b.queuedCost -= leased;
        b.size = res.leaseHeld;
        b.renewedAt = Date.now();
        for (let i = 0; i < batch.length; i++) batch[i]!.onCharged?.(res.charged[i] ?? 0, res.short[i] ?? 0);
      } catch (err) {
        // The outbox closed (shutdown) with the batch unsent: it stays in the journal and the next
        // process sends it. Assume the worst for the lease size until a reply tells the truth.
        b.queuedCost -= leased;
        b.size -= leased;
        b.unsure = true;
        this.o.onError(err, 'settle');
      }
    }
  }

  private release(b: AccountLease): Promise<void> {
    return this.run(b, async () => {
      await this.flushNow(b, true);
      const keep = Math.max(0, b.carved + b.queuedCost);
      if (b.size > 0 || b.unsure) {
        // Lowered before the call: carves made while it runs see only what will remain.
        b.size = Math.min(b.size, keep);
        const r = await this.o.leases.releaseLease({ accountId: b.accountId, leaseId: this.leaseId, keep });
        b.size = Math.min(r.leaseHeld, keep);
        b.unsure = false;
      }
      if (b.size === 0 && b.idle && !b.extending && this.books.get(b.accountId) === b) {
        this.books.delete(b.accountId);
      }
    });
  }
}
