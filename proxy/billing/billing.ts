// A replica's billing, built once per proxy app: the parts a call's money runs through
// (./charge.ts tells the story of one call), wired together, started and stopped in order.
// - the outbox and its journal (every settlement, resent until Redis acknowledges it, replayed
//   from the journal at start);
// - credit leases, the lease reclaim between replicas, and the renewer of reserved holds;
// - the hold sweeper (one per fleet, behind a Redis lock) that voids holds whose owner died;
// - the gate: no new billable call while settlements cannot reach Redis;
// - the open calls, so shutdown can wait for them, or end them, before the outbox drains.
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { LeaseMetering, Metering, startHoldSweeper, type Voided } from '../../core/billing/index.ts';
import { loadMeteringScripts } from '../../core/billing/scripts.ts';
import type { Config } from '../../core/config.ts';
import { type ApiError, billingUnavailable, storeLostData } from '../../core/errors.ts';
import { parseDecimalToNano } from '../../core/money.ts';
import { duplicateRedis, type Redis } from '../../core/redis-client.ts';
import { reportEpochFault } from '../../core/redis-epoch.ts';
import {
  type AcknowledgedWrite,
  publishReplicaReport,
  RECENT_ACKS_KEPT,
  RECENT_ACKS_MS,
  removeReplicaReport,
} from '../../core/replica-reports.ts';
import type { ProxyMetrics } from '../metrics/metrics.ts';
import { BalanceView } from './balance-view.ts';
import { CallCharge, type CallCounts, type CallInfo, type ChargeDeps, type Quote } from './charge.ts';
import { registerFaultMetrics } from './fault-metrics.ts';
import { HoldRenewer } from './hold-renewer.ts';
import { Journal } from './journal.ts';
import { LeaseReclaim } from './lease-reclaim.ts';
import { CreditLeases } from './leases.ts';
import { Outbox } from './outbox.ts';
import { knownEpoch } from './redis-identity.ts';
import { RedisProbe } from './redis-probe.ts';

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
  readonly holdTtlMs: number;
  private readonly openCharges = new Set<CallCharge>();
  private idleWaiters: (() => void)[] = [];
  private readonly outboxRedis: Redis;
  /** Issue 22: a hung Redis is noticed (and treated like a dead one), and its return acted on at once. */
  private readonly probe: RedisProbe;
  private readonly stopSweeper: () => Promise<void>;
  private replaying: Promise<void> = Promise.resolve();
  private readonly reportTimer: NodeJS.Timeout;
  private readonly progressTimer: NodeJS.Timeout | null;
  private closed = false;
  /** Settlements Redis acknowledged lately, oldest first (core/replica-reports.ts, AcknowledgedWrite). */
  private readonly recentAcks: AcknowledgedWrite[] = [];

  private constructor(
    private readonly o: BillingOptions,
    private readonly journal: Journal,
    epoch: { expected: string; found: string | null; matches: boolean },
  ) {
    const { config, metrics, log } = o;
    this.holdTtlMs = config.HOLD_TTL_MS;
    this.metering = new Metering(o.redis);
    this.outboxRedis = duplicateRedis(o.redis, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: config.REDIS_WAIT_TIMEOUT_MS + 2_000,
    });
    this.outboxRedis.on('error', () => {}); // each failed delivery is logged by the outbox
    this.outbox = new Outbox({
      journal,
      redis: this.outboxRedis,
      waitReplicas: config.REDIS_WAIT_REPLICAS,
      waitTimeoutMs: config.REDIS_WAIT_TIMEOUT_MS,
      onError: (err, what) => log.error({ err }, `outbox: ${what} not acknowledged yet; retrying`),
      // Issue 22: settlements owed to the Redis this replica knew are never written into another.
      holdBack: () => this.probe.mismatch !== null,
      onAcknowledged: (w) => this.recentAcks.push(w),
    });
    let reported = 0;
    this.probe = new RedisProbe({
      redis: this.outboxRedis,
      epoch: epoch.expected,
      matchedAtStart: epoch.matches,
      foundAtStart: epoch.found,
      intervalMs: 100,
      timeoutMs: config.REDIS_COMMAND_TIMEOUT_MS,
      onMismatch: (found) => {
        // Once a second: the log line, and the report ledger check reads from Redis itself.
        if (Date.now() - reported < 1_000) return;
        reported = Date.now();
        const owed = this.journal.pendingRecords;
        log.error(
          { expected: epoch.expected, found, owed },
          'Redis is not the one this replica knew (its epoch is missing or different): it lost its data or is another server. Not serving; owed settlements stay in the journal. Restore Redis from its AOF/RDB (README "Faults").',
        );
        reportEpochFault(
          o.redis,
          {
            replica: replicaName(config.PROXY_DATA_DIR),
            expected: epoch.expected,
            found,
            owed,
            sinceMs: this.probe.mismatch?.since ?? Date.now(),
          },
          10_000,
        ).catch(() => {});
      },
      onBack: () => {
        log.warn('Redis answers again; sending owed settlements now');
        this.outbox.wake();
        loadMeteringScripts(o.redis).catch(() => {}); // a restarted Redis lost them
      },
      onUncovered: (primaries) => {
        if (primaries.length > 0)
          log.warn(
            { primaries },
            'these Redis Cluster primaries hold no epoch key (each serves fewer than 256 contiguous slots): their losing their data would go unseen by the epoch probe (README "Running on Redis Cluster")',
          );
        else log.info('every Redis Cluster primary holds an epoch key again');
      },
    });
    metrics.sources.outboxPending = () => this.outbox.pending;
    metrics.sources.outboxStalledMs = () => this.outbox.stalledMs();
    registerFaultMetrics(metrics.registry, {
      redisFailingMs: () => this.probe.failingMs(),
      redisDataLost: () => (this.probe.mismatch === null ? 0 : 1),
      journalFailingMs: () => {
        const f = journal.writeFailure;
        return f === null ? 0 : Date.now() - f.since;
      },
    });
    this.leases = config.PROXY_LEASES
      ? new CreditLeases({
          leases: new LeaseMetering(o.redis),
          outbox: this.outbox,
          ttlMs: config.HOLD_TTL_MS,
          maxLease: parseDecimalToNano(config.PROXY_LEASE_MAX),
          idleMs: config.PROXY_LEASE_IDLE_MS,
          onError: (err, what) => log.error({ err }, `credit ${what} failed`),
          onAvailable: (accountId, available) => this.balances.set(accountId, available),
          onVoided: (v) => this.observeVoids(v),
        })
      : null;
    this.reclaim =
      this.leases === null
        ? null
        : new LeaseReclaim({
            redis: o.redis,
            subscriber: o.subscriber,
            leases: this.leases,
            timeoutMs: config.PROXY_LEASE_RECLAIM_MS,
            onError: (err) => log.error({ err }, 'lease reclaim failed'),
          });
    this.renewer = new HoldRenewer({
      metering: this.metering,
      ttlMs: config.HOLD_TTL_MS,
      onError: (err) => log.error({ err }, 'hold renewal failed'),
      onGone: (accountId, holdIds) =>
        log.warn({ accountId, holdIds }, 'holds of running calls were voided while Redis was out of reach'),
    });
    // Issue 22: what this replica owes is visible to `ledger check`, even after it died.
    this.reportTimer = setInterval(() => {
      if (this.probe.mismatch === null) this.publishReport().catch(() => {});
    }, config.PROXY_REPLICA_REPORT_MS);
    this.reportTimer.unref();
    // Issue 22: running streams leave their charge so far in the journal (one write for all).
    this.progressTimer =
      config.PROXY_STREAM_PROGRESS_MS > 0
        ? setInterval(() => this.journalProgress(), config.PROXY_STREAM_PROGRESS_MS)
        : null;
    this.progressTimer?.unref();
    this.stopSweeper = startHoldSweeper(o.redis, {
      intervalMs: config.HOLD_SWEEP_INTERVAL_MS,
      lockTtlMs: config.HOLD_SWEEPER_LOCK_MS,
      onVoided: (voided) => {
        for (const v of voided) {
          metrics.holdsVoided.inc({ reason: v.reason });
          log.warn(v, 'voided a hold whose owner stopped renewing it');
        }
      },
      onError: (err) => log.error({ err }, 'hold sweep failed'),
    });
  }

  /** Opens the journal in PROXY_DATA_DIR and sends what a previous process left in it. */
  static async start(o: BillingOptions): Promise<Billing> {
    const { journal, replayed } = Journal.open(o.config.PROXY_DATA_DIR, {
      // Issue 22 (a full disk): no crash; calls are refused until the journal writes again.
      onWriteError: (err) =>
        o.log.error(
          { err },
          'the settlement journal cannot be written; refusing billable calls until it can',
        ),
      onWriteRecovered: () => o.log.warn('the settlement journal is written again; serving billable calls'),
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

  private get replica(): string {
    return replicaName(this.o.config.PROXY_DATA_DIR);
  }

  private publishReport(): Promise<void> {
    const owed = this.journal.owed();
    const now = Date.now();
    const keepFrom = this.recentAcks.findIndex((w) => w.atMs >= now - RECENT_ACKS_MS);
    this.recentAcks.splice(
      0,
      keepFrom < 0 ? this.recentAcks.length : Math.max(keepFrom, this.recentAcks.length - RECENT_ACKS_KEPT),
    );
    return publishReplicaReport(this.outboxRedis, {
      replica: this.replica,
      owed: owed.count,
      byAccount: owed.byAccount,
      oldestAgeMs: owed.oldestAtMs === null ? null : now - owed.oldestAtMs,
      reportedAtMs: now,
      everyMs: this.o.config.PROXY_REPLICA_REPORT_MS,
      recent: this.recentAcks,
    });
  }

  /** A call's money (./charge.ts); refused while this replica cannot bill. */
  open(call: CallInfo, quote: Quote): CallCharge {
    const refused = this.refusal();
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

  /** Why new billable calls are refused now, or null. */
  refusal(): ApiError | null {
    const r = this.readiness();
    if (!r.redisData) return storeLostData();
    return r.billing && r.journal ? null : billingUnavailable();
  }

  /**
   * /readyz's billing checks: settlements reach Redis and Redis answers (a hung Redis counts as a
   * dead one after the same bound); the journal can be written (a full disk).
   */
  readiness(): { billing: boolean; journal: boolean; redisData: boolean } {
    const stall = this.o.config.PROXY_OUTBOX_STALL_MS;
    return {
      // Redis has the epoch this replica knew (it did not lose its data).
      redisData: this.probe.mismatch === null,
      billing: this.outbox.stalledMs() <= stall && this.probe.failingMs() <= stall,
      journal: this.journal.writeFailure === null,
    };
  }

  /** Redis is not the one this replica knew (it lost its data): checked on every /v1 request, so cheap. */
  get redisDataLost(): boolean {
    return this.probe.mismatch !== null;
  }

  /** Why this replica's billing is not ready, in words for /readyz and the operator (empty: ready). */
  faults(): string[] {
    const out: string[] = [];
    const m = this.probe.mismatch;
    if (m !== null)
      out.push(
        `Redis lost its data or is another server: its epoch is ${m.found ?? 'missing'}, this replica knew ${m.expected}; ${this.journal.pendingRecords} settlements stay in the journal until Redis is restored from its AOF/RDB`,
      );
    const f = this.journal.writeFailure;
    if (f !== null)
      out.push(`the settlement journal cannot be written (${f.error.message}): free space in PROXY_DATA_DIR`);
    const stall = this.o.config.PROXY_OUTBOX_STALL_MS;
    if (this.probe.failingMs() > stall) out.push(`Redis has not answered for ${this.probe.failingMs()} ms`);
    else if (this.outbox.stalledMs() > stall)
      out.push(`settlements have not reached Redis for ${this.outbox.stalledMs()} ms`);
    return out;
  }

  mayReserveAlongside(accountId: string, hold: number): boolean {
    const f = this.o.config.PROXY_CONCURRENT_RESERVE_FACTOR;
    if (f <= 0) return false;
    const known = this.balances.available(accountId);
    return known !== undefined && known >= f * Math.max(hold, 1);
  }

  observe(charge: CallCharge, counts: CallCounts, charged: number, short: number): void {
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
    clearInterval(this.reportTimer);
    if (this.progressTimer !== null) clearInterval(this.progressTimer);
    // Handed over cleanly: nothing owed, no report; else the last word stays for ledger check.
    if (this.probe.mismatch === null) {
      const gone = this.journal.pendingRecords === 0;
      await (gone ? removeReplicaReport(this.outboxRedis, this.replica) : this.publishReport()).catch(
        () => {},
      );
    }
    this.journal.close();
    this.outboxRedis.disconnect();
  }
}

/** This replica's name in reports: its host (the pod's name under Kubernetes) and data directory. */
export function replicaName(dataDir: string): string {
  return `${hostname()}:${resolve(dataDir)}`;
}
