// A replica's billing, built once per proxy app: the parts a call's money runs through
// (./charge.ts tells the story of one call), wired together, started and stopped in order.
// - the outbox and its journal (every settlement, resent until Redis acknowledges it, replayed
//   from the journal at start);
// - credit leases, the lease reclaim between replicas, and the renewer of reserved holds;
// - the hold sweeper (one per fleet, behind a Redis lock) that voids holds whose owner died;
// - the gate: no new billable call while a fault of the table in proxy/faults/ holds (Billing hands
//   it the probe, the outbox and the journal to read; the Redis probe's acting half is
//   ./redis-watch.ts, what the replica owes is published by ./replica-reporter.ts);
// - the open calls, so shutdown can wait for them, or end them, before the outbox drains;
// - batches' money (./batch-money.ts): a batch's hold, its lines' charges and bills. Every call's
//   charge, a batch line's too, is made by `open`: billing is the one door money goes through.
import type { FastifyBaseLogger } from 'fastify';
import { LeaseMetering, Metering, startHoldSweeper, type Voided } from '../../core/billing/index.ts';
import { loadMeteringScripts } from '../../core/billing/scripts.ts';
import type { ProxyConfig as Config } from '../../core/config/index.ts';
import { parseDecimalToNano } from '../../core/money.ts';
import { duplicateRedis, primaries, type Redis } from '../../core/redis/client.ts';
import { FaultBoard } from '../faults/board.ts';
import { registerFaultMetrics } from '../faults/fault-metrics.ts';
import { FAULTS } from '../faults/faults.ts';
import type { ProxyMetrics } from '../metrics/metrics.ts';
import type { CallUsage } from '../usage.ts';
import { BalanceView } from './balance-view.ts';
import type { LineTicket } from './batch-line-charge.ts';
import { BatchMoney } from './batch-money.ts';
import { CallCharge, type CallInfo, type Charge, type ChargeDeps, type Quote } from './charge.ts';
import { HoldRenewer } from './hold-renewer.ts';
import { LeaseReclaim } from './lease-reclaim.ts';
import { CreditLeases } from './leases.ts';
import { Outbox } from './outbox.ts';
import { knownEpoch } from './redis-identity.ts';
import type { RedisProbe } from './redis-probe.ts';
import { watchRedis } from './redis-watch.ts';
import { ReplicaReporter } from './replica-reporter.ts';
import { SettlementJournal } from './settlement-journal.ts';
import { SlotLines } from './slot-lines.ts';

export interface BillingOptions {
  config: Config;
  /** The request path's connection (reserves, renewals, leases). */
  redis: Redis;
  /** A connection in subscriber mode (lease reclaim requests). */
  subscriber: Redis;
  metrics: ProxyMetrics;
  log: FastifyBaseLogger;
}

export class Billing implements ChargeDeps {
  readonly metering: Metering;
  readonly leases: CreditLeases | null;
  readonly outbox: Outbox;
  readonly renewer: HoldRenewer;
  readonly reclaim: LeaseReclaim | null;
  readonly balances = new BalanceView();
  /** Batches' holds and their lines' bills. */
  readonly batches: BatchMoney;
  readonly slots = new SlotLines();
  readonly holdTtlMs: number;
  /** What this replica cannot bill through now (proxy/faults/): readiness, refusals, /readyz's words. */
  readonly faults: FaultBoard;
  private readonly openCharges = new Set<CallCharge>();
  private idleWaiters: (() => void)[] = [];
  private readonly outboxRedis: Redis;
  /** Issue 22: a hung Redis is noticed (and treated like a dead one), and its return acted on at once. */
  private readonly probe: RedisProbe;
  private readonly reporter: ReplicaReporter;
  private readonly stopSweeper: () => Promise<void>;
  private replaying: Promise<void> = Promise.resolve();
  private readonly progressTimer: NodeJS.Timeout | null;
  private closed = false;

  private constructor(
    private readonly o: BillingOptions,
    private readonly journal: SettlementJournal,
    epoch: { expected: string; found: string | null; matches: boolean },
  ) {
    const { config, metrics, log } = o;
    this.holdTtlMs = config.HOLD_TTL_MS;
    this.metering = new Metering(o.redis);
    this.outboxRedis = outboxConnection(o.redis, config);
    this.reporter = new ReplicaReporter({
      redis: this.outboxRedis,
      journal,
      dataDir: config.PROXY_DATA_DIR,
      everyMs: config.PROXY_REPLICA_REPORT_MS,
      redisIsKnown: () => this.probe.mismatch === null,
    });
    this.outbox = new Outbox({
      journal,
      redis: this.outboxRedis,
      waitReplicas: config.REDIS_WAIT_REPLICAS,
      waitTimeoutMs: config.REDIS_WAIT_TIMEOUT_MS,
      onError: (err, what) => log.error({ err }, `outbox: ${what} not acknowledged yet; retrying`),
      // Issue 22: settlements owed to the Redis this replica knew are never written into another.
      holdBack: () => this.probe.mismatch !== null,
      onAcknowledged: (w) => this.reporter.acknowledged(w),
      onShortOfReplicas: (shard) =>
        log.warn(
          { shard, want: config.REDIS_WAIT_REPLICAS },
          'a Redis primary has fewer replicas than REDIS_WAIT_REPLICAS (a failover promoted its replica): billing goes on, its settlements kept in the journal until a replica has them',
        ),
      onReplicasBack: (shard, settlements, afterMs) =>
        log.info(
          { shard, settlements, afterMs },
          'the Redis primary has its replicas again; its settlements left the journal',
        ),
    });
    this.probe = watchRedis({
      redis: o.redis,
      probeRedis: this.outboxRedis,
      epoch,
      timeoutMs: config.REDIS_COMMAND_TIMEOUT_MS,
      replica: this.reporter.replica,
      owed: () => journal.pendingRecords,
      onBack: () => this.outbox.wake(),
      log,
    });
    this.faults = new FaultBoard(FAULTS, {
      redisMismatch: () => this.probe.mismatch,
      redisFailingMs: () => this.probe.failingMs(),
      settlementsFailingMs: (accountId) => this.outbox.stalledMs(accountId),
      settlementsStalledEverywhere: () => {
        const { stalled } = this.outbox.stalledShards(config.PROXY_OUTBOX_STALL_MS);
        return stalled > 0 && stalled >= primaries(this.outboxRedis).length;
      },
      shardsWithoutReplicas: () => this.outbox.replicas.shortShards(),
      journalWriteFailure: () => journal.writeFailure,
      owedSettlements: () => journal.pendingRecords,
      stallMs: config.PROXY_OUTBOX_STALL_MS,
    });
    metrics.sources.outboxPending = () => this.outbox.pending;
    metrics.sources.owed = () => ({
      settlements: journal.pendingRecords,
      unwritten: journal.unwrittenRecords,
    });
    registerFaultMetrics(metrics.registry, this.faults);
    ({ leases: this.leases, reclaim: this.reclaim } = creditLeases(o, this.outbox, {
      onAvailable: (accountId, available) => this.balances.set(accountId, available),
      onVoided: (v) => this.observeVoids(v),
    }));
    this.batches = new BatchMoney({
      redis: o.redis,
      reclaim: this.reclaim,
      charged: (model, currency, amount) => metrics.creditsOf(model, currency).inc(amount),
    });
    this.renewer = new HoldRenewer({
      metering: this.metering,
      ttlMs: config.HOLD_TTL_MS,
      onError: (err) => log.error({ err }, 'hold renewal failed'),
      onGone: (accountId, holdIds) =>
        log.warn({ accountId, holdIds }, 'holds of running calls were voided while Redis was out of reach'),
    });
    // Issue 22: running streams leave their charge so far in the journal (one write for all).
    this.progressTimer = every(config.PROXY_STREAM_PROGRESS_MS, () => this.journalProgress());
    this.stopSweeper = sweepDeadHolds(o);
  }

  /** Opens the journal in PROXY_DATA_DIR and sends what a previous process left in it. */
  static async start(o: BillingOptions): Promise<Billing> {
    const { journal, replayed } = SettlementJournal.open(o.config.PROXY_DATA_DIR, {
      // Issue 22 (a full disk): no crash; calls are refused until the journal writes again.
      onWriteError: (err) =>
        o.log.error(
          { err },
          'the settlement journal cannot be written; refusing billable calls until it can',
        ),
      onWriteRecovered: () => o.log.warn('the settlement journal is written again; serving billable calls'),
      onTornTail: (t) =>
        o.log.warn(
          t,
          'the settlement journal ended in a line cut short by a crash mid-write; set aside (a torn record’s call was answered only once Redis had its charge: nothing delivered is lost with it)',
        ),
    });
    const epoch = await knownEpoch(o.redis, o.config.PROXY_DATA_DIR);
    const b = new Billing(o, journal, epoch);
    await loadMeteringScripts(o.redis);
    await b.reclaim?.start();
    if (replayed.pending.length > 0) {
      o.log.warn({ settlements: replayed.pending.length }, 'replaying settlements a previous process left');
      b.replaying = b.outbox
        .replay(replayed, {
          batchPrefix: `replay-${b.leases?.leaseId ?? 'direct'}`,
          ttlMs: o.config.HOLD_TTL_MS,
          releaseLease: async (accountId, leaseId) => {
            await new LeaseMetering(o.redis).releaseLease({ accountId, leaseId });
          },
        })
        .then(
          () => o.log.info({ settlements: replayed.pending.length }, 'replayed settlements landed'),
          (err) => o.log.error({ err }, 'replaying settlements stopped'),
        );
    }
    return b;
  }

  private journalProgress(): void {
    let any = false;
    for (const c of this.openCharges) {
      const p = c.progress();
      if (p === null) continue;
      this.journal.progress(p);
      any = true;
    }
    if (any) this.journal.afterWrite();
  }

  /**
   * A call's money (./charge.ts); refused while this replica cannot bill. A batch line's call
   * (`line`, its runner's ticket) is covered by its batch's hold, made at the batch's creation, so
   * it is neither refused nor counted here: its charge hands the usage back to the runner, which
   * bills the line through `batches`.
   */
  open(call: CallInfo, quote: Quote, line: LineTicket | null = null): Charge {
    if (line !== null) return this.batches.openLine(call, quote, line);
    const refused = this.faults.refusal(call.principal.accountId);
    if (refused !== null) {
      this.o.metrics.billingRefused.inc();
      throw refused;
    }
    const charge = new CallCharge(this, call, quote);
    this.openCharges.add(charge);
    return charge;
  }

  /**
   * Gives a charge made at once back (a video job that failed; the script fails the job too).
   * Not gated: a refund only returns money, and waiting would leave a failed job charged.
   */
  async refund(a: Parameters<Metering['refund']>[0], currency: string): ReturnType<Metering['refund']> {
    const r = await this.metering.refund(a);
    if (!r.duplicate && r.refunded > 0) this.o.metrics.refundedOf(a.usage.model, currency).inc(r.refunded);
    return r;
  }

  mayReserveAlongside(accountId: string, hold: number): boolean {
    const f = this.o.config.PROXY_CONCURRENT_RESERVE_FACTOR;
    if (f <= 0) return false;
    const known = this.balances.available(accountId);
    return known !== undefined && known >= f * Math.max(hold, 1);
  }

  observe(charge: CallCharge, counts: CallUsage, charged: number, short: number): void {
    const m = this.o.metrics;
    const { model, principal } = charge.call;
    if (counts.inputTokens !== undefined) m.tokensOf(model, 'input').inc(counts.inputTokens);
    if (counts.cachedTokens !== undefined) m.tokensOf(model, 'cached').inc(counts.cachedTokens);
    if (counts.outputTokens !== undefined) m.tokensOf(model, 'output').inc(counts.outputTokens);
    const currency = principal.currency ?? '';
    m.creditsOf(model, currency).inc(charged);
    if (short > 0) {
      m.uncollected.inc({ model, currency }, short);
      this.o.log.warn(
        { requestId: charge.call.requestId, accountId: principal.accountId, short },
        'a delivered call could not be charged in full',
      );
    }
  }

  observeVoids(v: Voided): void {
    if (v.holds > 0) this.o.metrics.holdsVoided.inc({ reason: 'hold_expired' }, v.holds);
    if (v.leases > 0) this.o.metrics.holdsVoided.inc({ reason: 'lease_expired' }, v.leases);
  }

  finished(charge: CallCharge): void {
    this.openCharges.delete(charge);
    // Ended without a record (nothing to charge): its progress, if any, no longer stands for it.
    this.journal.endProgress(charge.call.requestId);
    if (this.openCharges.size === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  onError(err: unknown, what: string): void {
    this.o.log.error({ err }, `credit ${what} failed`);
  }

  /** Calls holding credit now. */
  get openCalls(): number {
    return this.openCharges.size;
  }

  /** Resolves true once no call holds credit, false if `timeoutMs` passes first. */
  whenIdle(timeoutMs: number): Promise<boolean> {
    if (this.openCharges.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.openCharges.size === 0), timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /**
   * Ends one running call, by its request id (a background response cancelled): it settles what
   * it delivered, as any call ended early does. False when no such call is running here.
   */
  abortCall(requestId: string, reason: unknown): boolean {
    for (const c of this.openCharges)
      if (c.call.requestId === requestId) {
        c.call.cancel.abort(reason);
        return true;
      }
    return false;
  }

  /** Ends every running call (shutdown after the grace period): each settles what it delivered. */
  abortOpen(reason: unknown): void {
    for (const c of this.openCharges) c.call.cancel.abort(reason);
  }

  /** Lands every queued settlement and keeps the leases held (tests). */
  async settleQueued(): Promise<void> {
    await this.leases?.flushAll();
    await this.outbox.drain(30_000);
  }

  /** Lands every queued settlement and gives back every lease's unused money (tests). */
  async quiesce(): Promise<void> {
    await this.leases?.quiesce();
    await this.outbox.drain(30_000);
  }

  /**
   * Shutdown, after the calls ended: batches and settlements land (for at most `drainMs`; what is
   * left stays in the journal for the next start), leases go back, the sweeper lock is given up.
   */
  async close(drainMs: number): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.renewer.stop();
    this.probe.stop();
    await this.stopSweeper();
    const leasesClosed = this.leases?.close() ?? Promise.resolve();
    let timer: NodeJS.Timeout | undefined;
    const landed = await Promise.race([
      leasesClosed.then(() => this.outbox.drain(drainMs)),
      new Promise<boolean>((r) => {
        timer = setTimeout(() => r(false), drainMs);
      }),
    ]);
    clearTimeout(timer);
    if (!landed) {
      this.o.log.warn(
        { pending: this.journal.pendingRecords },
        'settlements not acknowledged at shutdown stay in the journal; the next start sends them',
      );
    }
    this.outbox.close();
    await leasesClosed;
    await this.replaying;
    if (this.progressTimer !== null) clearInterval(this.progressTimer);
    await this.reporter.close();
    this.journal.close();
    this.outboxRedis.disconnect();
  }
}

/** Credit leases (PROXY_LEASES) and the lease reclaim between replicas, or neither. */
function creditLeases(
  { config, redis, subscriber, log }: BillingOptions,
  outbox: Outbox,
  on: { onAvailable: (accountId: string, available: number) => void; onVoided: (v: Voided) => void },
): { leases: CreditLeases | null; reclaim: LeaseReclaim | null } {
  if (!config.PROXY_LEASES) return { leases: null, reclaim: null };
  const leases = new CreditLeases({
    leases: new LeaseMetering(redis),
    outbox,
    ttlMs: config.HOLD_TTL_MS,
    maxLease: parseDecimalToNano(config.PROXY_LEASE_MAX),
    idleMs: config.PROXY_LEASE_IDLE_MS,
    onError: (err, what) => log.error({ err }, `credit ${what} failed`),
    ...on,
  });
  const reclaim = new LeaseReclaim({
    redis,
    subscriber,
    leases,
    timeoutMs: config.PROXY_LEASE_RECLAIM_MS,
    onError: (err) => log.error({ err }, 'lease reclaim failed'),
  });
  return { leases, reclaim };
}

/** The outbox's own connection: it fails fast (no offline queue, no retries), the outbox retries. */
function outboxConnection(redis: Redis, config: Config): Redis {
  const c = duplicateRedis(redis, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: config.REDIS_WAIT_TIMEOUT_MS + 2_000,
  });
  c.on('error', () => {}); // each failed delivery is logged by the outbox
  return c;
}

/** `run` every `ms` (none when 0), not keeping the process alive. */
function every(ms: number, run: () => void): NodeJS.Timeout | null {
  if (ms <= 0) return null;
  const t = setInterval(run, ms);
  t.unref();
  return t;
}

/** The fleet's one hold sweeper (behind a Redis lock): voids holds whose owner stopped renewing them. */
function sweepDeadHolds({ redis, config, metrics, log }: BillingOptions): () => Promise<void> {
  return startHoldSweeper(redis, {
    intervalMs: config.HOLD_SWEEP_INTERVAL_MS,
    lockTtlMs: config.HOLD_SWEEPER_LOCK_MS,
    resyncMs: config.HOLD_INDEX_RESYNC_MS,
    onRefiled: (refiled) =>
      log.warn(
        { count: refiled.length, holds: refiled.slice(0, 20) },
        "filed again holds missing from the sweeper's expiry index (lost in a Redis failover)",
      ),
    onVoided: (voided) => {
      for (const v of voided) {
        metrics.holdsVoided.inc({ reason: v.reason });
        log.warn(v, 'voided a hold whose owner stopped renewing it');
      }
    },
    onError: (err) => log.error({ err }, 'hold sweep failed'),
  });
}
