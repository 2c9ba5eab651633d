// The settlement outbox (DESIGN "Money"): every settlement this replica owes goes through it, is in
// its journal (./settlement-journal.ts) before the client has its answer, and is sent to Redis again and
// again, with backoff, under the same idempotency key (the hold id, or the lease batch id) until
// Redis acknowledges it — and, with REDIS_WAIT_REPLICAS set, until WAIT confirms that many replicas
// have it, so a failover cannot lose it (./replica-wait.ts; a shard left without replicas is a
// degraded state billing goes on through). A settlement is never given up: if the process stops
// first, the next one replays the journal. `stalledMs` tells the proxy how long the oldest failing
// settlement has been failing, so it stops serving calls it cannot bill (Billing.open) — per shard
// on a Redis Cluster: one primary failing over stalls its own accounts' settlements, and the
// others' calls go on (issue 38).
import {
  LeaseMetering,
  type LeaseSettleResult,
  Metering,
  nano,
  type SettleResult,
  type UsageRecord,
  usageArgs,
} from '../../core/billing/index.ts';
import type { AcknowledgedWrite } from '../../core/billing/replica-reports.ts';
import { type Redis, shardOf } from '../../core/redis/client.ts';
import { accountKeys } from '../../core/redis/keyspace.ts';
import { ReplicaWait } from './replica-wait.ts';
import type { Replayed, SettlementJournal, SettleRecord } from './settlement-journal.ts';

export interface OutboxOptions {
  journal: SettlementJournal;
  /**
   * A connection of the outbox's own, without an offline queue and with a command timeout: a
   * delivery during an outage fails (and is retried) instead of waiting unseen, and WAIT covers
   * exactly the settlements sent on it.
   */
  redis: Redis;
  waitReplicas: number;
  waitTimeoutMs: number;
  onError: (err: unknown, what: string) => void;
  /**
   * True while nothing may be sent (Redis is not the one the journal's settlements are owed to):
   * deliveries wait, failing, and stay in the journal.
   */
  holdBack?: () => boolean;
  /** A shard was left without the replicas REDIS_WAIT_REPLICAS asks for / has them again. */
  onShortOfReplicas?: (shard: string) => void;
  onReplicasBack?: (shard: string, settlements: number, afterMs: number) => void;
  /** Redis acknowledged this settlement (and it left the journal): the replica's report keeps it a while. */
  onAcknowledged?: (w: AcknowledgedWrite) => void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/** The outbox closed with this delivery still pending: it stays in the journal for the next start. */
export class OutboxClosedError extends Error {
  constructor() {
    super('The settlement outbox closed; the settlement stays in the journal for the next start.');
    this.name = 'OutboxClosedError';
  }
}

interface Delivery {
  /** When its first attempt failed (the outbox is "not draining" since then), or null. */
  failingSince: number | null;
  /** A key of its account: which shard it goes to (read when asked, as slots move in a failover). */
  key: string;
}

export class Outbox {
  private readonly metering: Metering;
  private readonly leases: LeaseMetering;
  readonly replicas: ReplicaWait;
  private readonly inFlight = new Set<Delivery>();
  private readonly wakers = new Set<() => void>();
  private idleWaiters: (() => void)[] = [];
  private closed = false;
  private readonly minBackoffMs: number;
  private readonly maxBackoffMs: number;

  constructor(private readonly o: OutboxOptions) {
    this.metering = new Metering(o.redis);
    this.leases = new LeaseMetering(o.redis);
    this.replicas = new ReplicaWait({
      redis: o.redis,
      want: o.waitReplicas,
      timeoutMs: o.waitTimeoutMs,
      ...(o.onShortOfReplicas ? { onShort: o.onShortOfReplicas } : {}),
      ...(o.onReplicasBack ? { onRestored: o.onReplicasBack } : {}),
    });
    this.minBackoffMs = o.minBackoffMs ?? 50;
    this.maxBackoffMs = o.maxBackoffMs ?? 2_000;
  }

  /** A call on a hold of its own: journaled now, then sent until Redis acknowledges it. */
  settleHold(a: Omit<SettleRecord, 'seq' | 'leaseId'>): Promise<SettleResult> {
    return this.sendHold(this.recordHold(a));
  }

  /** A call on a hold of its own, journaled now: `sendHold` sends it (settleHold does both). */
  recordHold(a: Omit<SettleRecord, 'seq' | 'leaseId'>): SettleRecord {
    checkRecord(a);
    return this.o.journal.record({ ...a, leaseId: null });
  }

  /** A call carved from a lease: journaled now; CreditLeases sends it in a batch (settleBatch). */
  recordLeased(a: Omit<SettleRecord, 'seq'>): SettleRecord {
    checkRecord(a);
    return this.o.journal.record(a);
  }

  /**
   * Runs `deliver` once the call's settlement (`record`, its seq; null: it has none) is in the
   * journal file (this event-loop turn) — or, on a full disk, acknowledged by Redis.
   */
  afterJournaled(deliver: () => void, record: number | null): void {
    this.o.journal.afterWrite(deliver, record);
  }

  /**
   * A lease batch: its line is made durable first, then it is sent until acknowledged. A batch is
   * the exactly-once unit only while its line is on disk: a restart resends it under its own id.
   * While the disk refuses writes it is sent at once instead (the calls it carries wait for it,
   * ./settlement-journal.ts afterWrite) in per-record mode, each record exactly once by its hold
   * id: the disk may later take some of its records' lines and never the batch's, and a restart
   * sends those in another batch (`perRecord`: at a replay every batch is sent so).
   */
  async settleBatch(b: {
    accountId: string;
    leaseId: string;
    batchId: string;
    ttlMs: number;
    records: readonly SettleRecord[];
    perRecord?: boolean;
  }): Promise<LeaseSettleResult> {
    const seqs = b.records.map((r) => r.seq);
    this.o.journal.batch({ accountId: b.accountId, leaseId: b.leaseId, batchId: b.batchId, seqs });
    const durable = await this.o.journal.batchDurable();
    return this.sendBatch({ ...b, perRecord: b.perRecord === true || !durable }, seqs);
  }

  /**
   * Sends what a previous process left in the journal: its unacknowledged batches as they were (so
   * a batch Redis already applied is answered from its done key), its other leased records in new
   * batches, its own holds by hold id. Every batch goes per record: a record whose batch line was
   * lost (a full disk) may have been charged in it, and is answered from its own done key. Once a
   * dead lease's records are in, what is left of that lease is given back at once rather than
   * waiting for the sweeper.
   */
  async replay(
    replayed: Replayed,
    o: {
      batchPrefix: string;
      ttlMs: number;
      releaseLease: (accountId: string, leaseId: string) => Promise<void>;
    },
  ): Promise<void> {
    const bySeq = new Map(replayed.pending.map((r) => [r.seq, r]));
    const work: Promise<unknown>[] = [];
    const leasesDone = new Map<string, { accountId: string; leaseId: string; sent: Promise<unknown>[] }>();
    const leaseWork = (accountId: string, leaseId: string, p: Promise<unknown>) => {
      const key = `${accountId} ${leaseId}`;
      const l = leasesDone.get(key);
      if (l) l.sent.push(p);
      else leasesDone.set(key, { accountId, leaseId, sent: [p] });
    };
    for (const b of replayed.batches) {
      const records = b.seqs.map((s) => bySeq.get(s)).filter((r): r is SettleRecord => r !== undefined);
      for (const r of records) bySeq.delete(r.seq);
      leaseWork(
        b.accountId,
        b.leaseId,
        this.sendBatch({ ...b, ttlMs: o.ttlMs, records, perRecord: true }, b.seqs),
      );
    }
    const unbatched = new Map<string, SettleRecord[]>();
    for (const r of bySeq.values()) {
      if (r.leaseId === null) {
        work.push(this.sendHold(r));
        continue;
      }
      const key = `${r.accountId} ${r.leaseId}`;
      const list = unbatched.get(key);
      if (list) list.push(r);
      else unbatched.set(key, [r]);
    }
    let n = 0;
    for (const records of unbatched.values()) {
      const { accountId, leaseId } = records[0]! as { accountId: string; leaseId: string };
      for (let i = 0; i < records.length; i += 256) {
        const chunk = records.slice(i, i + 256);
        const batchId = `${o.batchPrefix}-${++n}`;
        leaseWork(
          accountId,
          leaseId,
          this.settleBatch({ accountId, leaseId, batchId, ttlMs: o.ttlMs, records: chunk, perRecord: true }),
        );
      }
    }
    for (const l of leasesDone.values()) {
      work.push(Promise.all(l.sent).then(() => o.releaseLease(l.accountId, l.leaseId)));
    }
    await Promise.all(work);
  }

  /** Deliveries not acknowledged yet. */
  get pending(): number {
    return this.inFlight.size;
  }

  /**
   * How long the oldest failing delivery has been failing (0 when none fails): of those to
   * `accountId`'s shard, or of any shard.
   */
  stalledMs(accountId?: string, now = Date.now()): number {
    const shard = accountId === undefined ? null : shardOf(this.o.redis, accountKeys(accountId).account);
    let oldest = now;
    for (const d of this.inFlight)
      if (
        d.failingSince !== null &&
        d.failingSince < oldest &&
        (shard === null || shardOf(this.o.redis, d.key) === shard)
      )
        oldest = d.failingSince;
    return now - oldest;
  }

  /** The shards whose oldest failing delivery has failed longer than `ms`, and those with deliveries. */
  stalledShards(ms: number, now = Date.now()): { stalled: number; busy: number } {
    const oldest = new Map<string, number>();
    for (const d of this.inFlight) {
      const shard = shardOf(this.o.redis, d.key);
      oldest.set(shard, Math.min(oldest.get(shard) ?? now, d.failingSince ?? now));
    }
    let stalled = 0;
    for (const since of oldest.values()) if (now - since > ms) stalled++;
    return { stalled, busy: oldest.size };
  }

  /** Resolves true once nothing is pending, false if `timeoutMs` passes first. */
  drain(timeoutMs: number): Promise<boolean> {
    if (this.inFlight.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.inFlight.size === 0), timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Redis is back (RedisProbe): every delivery waiting out its backoff is tried again now. */
  wake(): void {
    for (const wake of this.wakers) wake();
  }

  /** Stops retrying: pending deliveries end with OutboxClosedError and stay in the journal. */
  close(): void {
    this.closed = true;
    this.replicas.stop();
    for (const wake of this.wakers) wake();
  }

  /** Sends a recorded hold settlement until Redis acknowledges it. */
  sendHold(r: SettleRecord): Promise<SettleResult> {
    return this.deliver(
      `settle ${r.holdId}`,
      r.accountId,
      () => this.metering.settle({ accountId: r.accountId, holdId: r.holdId, cost: r.cost, usage: r.usage }),
      () => {
        this.o.journal.ack([r.seq]);
        const w = {
          accountId: r.accountId,
          op: `settle:${r.holdId}`,
          count: 1,
          nano: r.cost,
          atMs: Date.now(),
        };
        this.o.onAcknowledged?.(w);
      },
    );
  }

  private sendBatch(
    b: {
      accountId: string;
      leaseId: string;
      batchId: string;
      ttlMs: number;
      records: readonly SettleRecord[];
      perRecord: boolean;
    },
    seqs: readonly number[],
  ): Promise<LeaseSettleResult> {
    return this.deliver(
      `settle batch ${b.leaseId}:${b.batchId}`,
      b.accountId,
      () =>
        this.leases.settleBatch({
          accountId: b.accountId,
          leaseId: b.leaseId,
          batchId: b.batchId,
          ttlMs: b.ttlMs,
          records: b.records,
          perRecord: b.perRecord,
        }),
      () => {
        this.o.journal.ack(seqs, b);
        this.o.onAcknowledged?.({
          accountId: b.accountId,
          op: `settle-batch:${b.leaseId}:${b.batchId}`,
          count: b.records.length,
          nano: b.records.reduce((sum, r) => sum + r.cost, 0),
          atMs: Date.now(),
        });
      },
    );
  }

  private async deliver<T>(
    what: string,
    accountId: string,
    send: () => Promise<T>,
    acked: () => void,
  ): Promise<T> {
    const d: Delivery = { failingSince: null, key: accountKeys(accountId).account };
    this.inFlight.add(d);
    try {
      for (let attempt = 0; ; attempt++) {
        if (this.closed) throw new OutboxClosedError();
        if (this.o.holdBack?.()) {
          d.failingSince ??= Date.now();
          await this.sleep(this.maxBackoffMs);
          continue;
        }
        try {
          const result = await send();
          await this.replicas.settled(accountId, acked);
          return result;
        } catch (err) {
          if (d.failingSince === null) d.failingSince = Date.now();
          // The first failure and then one in ten: an outage must not flood the log.
          if (attempt % 10 === 0) this.o.onError(err, what);
          await this.sleep(Math.min(this.maxBackoffMs, this.minBackoffMs * 2 ** Math.min(attempt, 10)));
        }
      }
    } finally {
      this.inFlight.delete(d);
      if (this.inFlight.size === 0) {
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        for (const w of waiters) w();
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.wakers.add(wake);
    });
  }
}

/** A record the scripts would refuse must fail at the call, not loop in the outbox forever. */
function checkRecord(r: { cost: number; carved: number; usage: UsageRecord }): void {
  nano('cost', r.cost);
  nano('carved', r.carved);
  usageArgs(r.usage);
}
