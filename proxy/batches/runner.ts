// The batch runner (docs/batches.md "How a batch runs"): one replica of the fleet at a time holds
// its lock (core/redis-lock.ts, Redis's ttl) and runs every batch's lines; a replica that dies
// stops renewing it and another takes over within BATCH_LOCK_MS. All state is in Redis and the
// media store: the batch record, its lines (a copy made at creation), each line's result. What a
// runner holds in memory is rebuilt from them, so a runner killed at any point loses nothing:
// - a line with no result is run (again): a run that was cut never wrote one, so it was never billed;
// - a line's result is written once (core/batches.ts, HSETNX), then billed under its own id
//   (settle-batch:batch:<id>:line:<index> on the batch's lease): a settlement sent twice charges
//   once; a result written and not yet billed is billed when the batch finalizes (./finalize.ts).
// Lines are admitted only into idle capacity (./idle-gate.ts). Cancelling or expiry stops
// admission; lines already running finish and are billed, and the batch finalizes once none runs.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { BatchFiles } from '../../core/batch-files.ts';
import { type Batches, finalStatuses } from '../../core/batches.ts';
import { batchTokenPrice, type LeaseMetering } from '../../core/billing/index.ts';
import { priceFor } from '../../core/catalogue/index.ts';
import type { ApiKeys } from '../../core/keys/index.ts';
import type { RecordFields } from '../../core/listed-records.ts';
import type { Redis } from '../../core/redis-client.ts';
import { RedisLock } from '../../core/redis-lock.ts';
import type { ObjectStore } from '../../core/storage/store.ts';
import type { ProxyContext } from '../context.ts';
import { finalizeBatch, settleLine } from './finalize.ts';
import { interactiveInFlight, mayAdmit } from './idle-gate.ts';
import { BATCH_LEASE_TTL_MS, batchLeaseId, linesKey, type StoredLine } from './keys.ts';
import type { LineTickets } from './line-tickets.ts';
import type { LineResult } from './output.ts';
import { runLine } from './run-line.ts';

interface Running {
  accountId: string;
  id: string;
  lines: StoredLine[];
  pending: number[];
  inFlight: number;
  secret: string;
  finalizing: boolean;
}

export interface RunnerDeps {
  app: FastifyInstance;
  ctx: ProxyContext;
  redis: Redis;
  batches: Batches;
  files: BatchFiles;
  store: ObjectStore;
  keys: ApiKeys;
  leases: LeaseMetering;
  tickets: LineTickets;
  log: FastifyBaseLogger;
}

export class BatchRunner {
  private readonly lock: RedisLock;
  private readonly running = new Map<string, Running>();
  private timer: NodeJS.Timeout | null = null;
  private ticking = false;
  private stopped = false;
  private readonly lineRuns = new Set<Promise<void>>();

  constructor(private readonly d: RunnerDeps) {
    this.lock = new RedisLock(d.redis, 'mp:batches:runner', d.ctx.config.BATCH_LOCK_MS);
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), this.d.ctx.config.BATCH_POLL_MS);
    this.timer.unref();
  }

  /** Stops admitting; lines running finish (their results written and billed), then the lock goes. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    await Promise.allSettled([...this.lineRuns]);
    await this.lock.release().catch(() => {});
  }

  /** Lines running now, per model (the idle gate counts them out of the interactive load). */
  private linesOf(model: string): number {
    let n = 0;
    for (const r of this.running.values())
      if (r.lines.length > 0 && this.modelOf(r) === model) n += r.inFlight;
    return n;
  }

  private readonly models = new Map<string, string>();
  private modelOf(r: Running): string {
    return this.models.get(r.id) ?? '';
  }

  async tick(): Promise<void> {
    if (this.ticking || this.stopped) return;
    this.ticking = true;
    try {
      if (!(await this.lock.acquireOrRenew())) {
        this.running.clear();
        return;
      }
      for (const b of await this.d.batches.active()) {
        try {
          await this.advance(b.accountId, b.id);
        } catch (err) {
          this.d.log.error({ err, batchId: b.id }, 'advancing a batch failed');
        }
      }
    } catch (err) {
      this.d.log.warn({ err }, 'the batch runner could not reach Redis');
    } finally {
      this.ticking = false;
    }
  }

  private async advance(accountId: string, id: string): Promise<void> {
    const { batches } = this.d;
    let record = await batches.get(accountId, id);
    if (record === null || finalStatuses.has(record.status ?? '')) {
      await batches.remove(accountId, id).catch(() => {});
      this.running.delete(id);
      return;
    }
    const now = Math.floor(Date.now() / 1000);
    if (record.status === 'validating') {
      await batches.move(accountId, id, ['validating'], 'in_progress', { in_progress_at: now });
      record = (await batches.get(accountId, id)) ?? record;
    }
    // The batch's hold lives while the batch does.
    await this.d.leases.extendLease({
      accountId,
      leaseId: batchLeaseId(id),
      add: 0,
      den: 1,
      ttlMs: BATCH_LEASE_TTL_MS,
    });
    const run = this.running.get(id) ?? (await this.load(accountId, id, record));
    const ending =
      record.status === 'cancelling' ? 'cancelled' : now >= Number(record.expires_at) ? 'expired' : null;
    if (ending === null && record.status === 'in_progress') this.admit(run, record);
    if (run.inFlight > 0 || run.finalizing) return;
    if (ending !== null || run.pending.length === 0) {
      run.finalizing = true;
      try {
        await finalizeBatch(this.d, {
          accountId,
          id,
          record,
          lines: run.lines,
          ending: ending ?? 'completed',
        });
      } finally {
        this.running.delete(id);
        this.models.delete(id);
      }
    }
  }

  private async load(accountId: string, id: string, record: RecordFields): Promise<Running> {
    const stored = await this.d.store.get(linesKey(accountId, id));
    let lines: StoredLine[] = [];
    if (stored !== null) {
      const parts: Buffer[] = [];
      for await (const c of stored.body) parts.push(c as Buffer);
      lines = JSON.parse(Buffer.concat(parts).toString('utf8')) as StoredLine[];
    }
    const done = await this.d.batches.done(accountId, id);
    // Written results not yet billed (a runner that died between the two) are billed first.
    const settled = await this.d.batches.settled(accountId, id);
    const results = await this.d.batches.results(accountId, id);
    for (const [index, json] of results)
      if (!settled.has(index))
        await settleLine(this.d, { accountId, id, record, index, result: JSON.parse(json) });
    let secret = '';
    try {
      secret = await this.d.keys.show(accountId, record.key_id ?? '');
    } catch {
      // The key is gone (deleted): its lines are refused as any call with it would be, and errored.
    }
    const run: Running = {
      accountId,
      id,
      lines,
      pending: lines.map((_, i) => i).filter((i) => !done.has(i)),
      inFlight: 0,
      secret,
      finalizing: false,
    };
    this.models.set(id, record.model ?? '');
    this.running.set(id, run);
    return run;
  }

  private admit(run: Running, record: RecordFields): void {
    const { ctx } = this.d;
    const entry = ctx.catalogue.get(record.model ?? '');
    const limits = { idleBelow: ctx.config.BATCH_IDLE_BELOW, concurrency: ctx.config.BATCH_CONCURRENCY };
    while (run.pending.length > 0 && !this.stopped) {
      const lines = this.linesOf(record.model ?? '');
      const interactive = entry === undefined ? 0 : interactiveInFlight(ctx.engine.picker, entry, lines);
      if (!mayAdmit({ interactive, lines, endpoints: entry?.endpoints.length ?? 1 }, limits)) return;
      const index = run.pending.shift()!;
      run.inFlight++;
      const p = this.runOne(run, record, index).finally(() => {
        run.inFlight--;
        this.lineRuns.delete(p);
        // The next line starts as soon as this one ends, not at the next tick.
        if (!this.stopped && run.inFlight === 0 && run.pending.length === 0) void this.tick();
        else if (!this.stopped && !run.finalizing) this.admitAgain(run);
      });
      this.lineRuns.add(p);
    }
  }

  /** Admits more lines of a running batch, reading its status first (a cancel stops admission). */
  private admitAgain(run: Running): void {
    this.d.batches
      .get(run.accountId, run.id)
      .then((record) => {
        if (record === null || record.status !== 'in_progress') return;
        if (Math.floor(Date.now() / 1000) >= Number(record.expires_at)) return;
        this.admit(run, record);
      })
      .catch(() => {});
  }

  private async runOne(run: Running, record: RecordFields, index: number): Promise<void> {
    const line = run.lines[index]!;
    const { ctx } = this.d;
    const entry = ctx.catalogue.get(record.model ?? '');
    const price = entry === undefined ? null : priceFor(entry, record.currency ?? null);
    let result: LineResult;
    try {
      result = await runLine(this.d.app, this.d.tickets, {
        endpoint: record.endpoint === '/v1/messages' ? '/v1/messages' : (record.endpoint ?? ''),
        customId: line.customId,
        body: line.body,
        budget: line.budget,
        secret: run.secret,
        price:
          price !== null && 'input' in price ? batchTokenPrice(price, entry?.batchDiscountPercent) : null,
      });
    } catch (err) {
      // Shutdown or a fault of this process: no result, so the line runs again (never billed twice).
      this.d.log.warn({ err, batchId: run.id, line: index }, 'a batch line did not run');
      run.pending.push(index);
      return;
    }
    try {
      const { stored } = await this.d.batches.recordLine(run.accountId, run.id, index, {
        json: JSON.stringify(result),
        ok: result.status_code >= 200 && result.status_code < 300,
        cost: result.cost,
      });
      // Billed from the stored result: an earlier run's, if one wrote first.
      await settleLine(this.d, {
        accountId: run.accountId,
        id: run.id,
        record,
        index,
        result: JSON.parse(stored),
      });
    } catch (err) {
      // Redis out of reach: the line is run (or billed, at finalizing) again under the same ids.
      this.d.log.error({ err, batchId: run.id, line: index }, 'recording a batch line failed');
      this.running.delete(run.id);
    }
  }
}
