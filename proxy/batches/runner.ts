// The batch runner (docs/batches.md "How a batch runs"): one replica of the fleet at a time holds
// its lock (core/redis/lock.ts, Redis's ttl) and runs every batch's lines; a replica that dies
// stops renewing it and another takes over within BATCH_LOCK_MS. All state is in Redis and the
// media store: the batch record, its lines (a copy made at creation), each line's result. What a
// runner holds in memory is rebuilt from them, so a runner killed at any point loses nothing:
// - a line with no result is run (again): a run that was cut never wrote one, so it was never billed;
// - a line's result is written once (core/jobs/batches.ts, HSETNX), then billed under its own id
//   (settle-batch:batch:<id>:line:<index> on the batch's lease): a settlement sent twice charges
//   once; a result written and not yet billed is billed when the batch finalizes (./finalize.ts).
// Lines are admitted only into idle capacity (./idle-gate.ts): the interactive calls of the model
// are this replica's, counted live at the door (./interactive.ts), plus the other replicas' from the
// fleet-wide demand (core/demand/demand.ts, read each tick). An interactive call arriving when lines hold
// the slots it needs (here at once; at another replica, at the first tick after it publishes its
// demand) preempts the newest line (its engine call is cancelled, it wrote no result, so it runs
// again later); one leaving lets lines in again. Cancelling or expiry stops admission; lines
// already running finish and are billed, and the batch finalizes once none runs.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { batchTokenPrice } from '../../core/billing/index.ts';
import { priceFor } from '../../core/catalogue/index.ts';
import type { DemandStore } from '../../core/demand/demand.ts';
import type { BatchFiles } from '../../core/jobs/batch-files.ts';
import { type Batches, finalStatuses } from '../../core/jobs/batches.ts';
import type { RecordFields } from '../../core/jobs/listed-records.ts';
import type { ApiKeys } from '../../core/keys/index.ts';
import type { Redis } from '../../core/redis/client.ts';
import { RedisLock } from '../../core/redis/lock.ts';
import type { ObjectStore } from '../../core/storage/store.ts';
import { type LineTicket, linePreempted } from '../billing/batch-line-charge.ts';
import type { ProxyContext } from '../context.ts';
import { finalizeBatch, settleLine } from './finalize.ts';
import { mayAdmit, slotRoom } from './idle-gate.ts';
import type { InteractiveLoad } from './interactive.ts';
import { CREATE_GRACE_POLLS, linesKey, type StoredLine } from './keys.ts';
import type { LineTickets } from './line-tickets.ts';
import type { LineResult } from './output.ts';
import { groupByPrefix } from './prefix-groups.ts';
import { LinePreemptedError, runLine } from './run-line.ts';

interface Running {
  accountId: string;
  id: string;
  lines: StoredLine[];
  pending: number[];
  inFlight: number;
  /** The lines running, by index, in the order they started (the newest is preempted first). */
  live: Map<number, LineTicket>;
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
  tickets: LineTickets;
  log: FastifyBaseLogger;
  interactive: InteractiveLoad;
  /** The fleet's demand, and this replica's id in it (its own is read live instead). */
  fleet: { store: DemandStore; proxyId: string };
}

export class BatchRunner {
  private readonly lock: RedisLock;
  private readonly running = new Map<string, Running>();
  private timer: NodeJS.Timeout | null = null;
  private ticking = false;
  private stopped = false;
  private readonly lineRuns = new Set<Promise<void>>();
  /** Other replicas' interactive calls per model, as of the last tick. */
  private others = new Map<string, number>();
  private readonly unlisten: () => void;

  constructor(private readonly d: RunnerDeps) {
    this.lock = new RedisLock(d.redis, 'mp:batches:runner', d.ctx.config.BATCH_LOCK_MS);
    this.unlisten = d.interactive.listen((model, arrived) => {
      if (arrived) this.preempt(model);
      else for (const r of this.running.values()) if (this.modelOf(r) === model) this.admitAgain(r);
    });
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), this.d.ctx.config.BATCH_POLL_MS);
    this.timer.unref();
  }

  /** Stops admitting; lines running finish (their results written and billed), then the lock goes. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unlisten();
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
      await this.readFleet();
      for (const b of await this.d.batches.active()) {
        try {
          await this.advance(b.accountId, b.id, b.filedAt);
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

  /** Other replicas' interactive demand (their queued and held calls too); a failed read keeps the last. */
  private async readFleet(): Promise<void> {
    try {
      const { byModel } = await this.d.fleet.store.read(this.d.fleet.proxyId);
      const before = this.others;
      this.others = new Map([...byModel].map(([m, d]) => [m, d.inFlight + d.queued + d.held]));
      // Calls that arrived at other replicas preempt lines as this replica's own do (at the door):
      // otherwise they would wait in the engine behind lines until these finished.
      for (const [model, n] of this.others) if (n > (before.get(model) ?? 0)) this.preempt(model);
    } catch (err) {
      this.d.log.warn({ err }, 'the batch runner could not read the fleet demand');
    }
  }

  private loadOf(model: string): { interactive: number; endpoints: number } {
    const entry = this.d.ctx.catalogue.get(model);
    return {
      interactive: this.d.interactive.count(model) + (this.others.get(model) ?? 0),
      endpoints: entry?.endpoints.length ?? 1,
    };
  }

  private limits() {
    return {
      idleBelow: this.d.ctx.config.BATCH_IDLE_BELOW,
      concurrency: this.d.ctx.config.BATCH_CONCURRENCY,
    };
  }

  /** Gives slots back to interactive calls: the newest lines above the room are cancelled. */
  private preempt(model: string): void {
    const live: LineTicket[] = [];
    for (const r of this.running.values())
      if (this.modelOf(r) === model) for (const t of r.live.values()) if (!t.preempted) live.push(t);
    const excess = live.length - slotRoom(this.loadOf(model), this.limits());
    if (excess <= 0) return;
    for (const t of live.slice(live.length - excess)) {
      t.preempted = true;
      t.cancel?.abort(linePreempted());
    }
  }

  private async advance(accountId: string, id: string, filedAt: number): Promise<void> {
    const { batches } = this.d;
    let record = await batches.get(accountId, id);
    if (record === null) {
      // Filed before its record is written (./create.ts): young, its creation may still be writing
      // it; past the grace, it never will be, and the hold it may have taken is given back.
      if (Date.now() - filedAt < CREATE_GRACE_POLLS * this.d.ctx.config.BATCH_POLL_MS) return;
      this.running.delete(id);
      await this.d.ctx.billing.batches.release(accountId, id);
      await this.d.store.delete(linesKey(accountId, id)).catch(() => {});
      await batches.unfile(accountId, id);
      this.d.log.warn(
        { accountId, batchId: id },
        'a batch never created whole was dropped, its hold given back',
      );
      return;
    }
    if (finalStatuses.has(record.status ?? '')) {
      // Ended (a move whose unfiling did not land): off the list, its record kept for the account.
      await batches.unfile(accountId, id);
      this.running.delete(id);
      return;
    }
    const now = Math.floor(Date.now() / 1000);
    if (record.status === 'validating') {
      await batches.move(accountId, id, ['validating'], 'in_progress', { in_progress_at: now });
      record = (await batches.get(accountId, id)) ?? record;
    }
    // The batch's hold lives while the batch does.
    await this.d.ctx.billing.batches.keep(accountId, id);
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
      // Lines sharing a prompt prefix run together (./prefix-groups.ts).
      pending: groupByPrefix(
        lines,
        lines.map((_, i) => i).filter((i) => !done.has(i)),
      ),
      inFlight: 0,
      live: new Map(),
      secret,
      finalizing: false,
    };
    this.models.set(id, record.model ?? '');
    this.running.set(id, run);
    return run;
  }

  private admit(run: Running, record: RecordFields): void {
    const model = record.model ?? '';
    while (run.pending.length > 0 && !this.stopped) {
      if (!mayAdmit({ ...this.loadOf(model), lines: this.linesOf(model) }, this.limits())) return;
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
        endpoint: record.endpoint ?? '',
        customId: line.customId,
        body: line.body,
        budget: line.budget,
        secret: run.secret,
        started: (ticket) => run.live.set(index, ticket),
        price:
          price !== null && 'input' in price ? batchTokenPrice(price, entry?.batchDiscountPercent) : null,
      });
    } catch (err) {
      // Preempted, shutdown or a fault of this process: no result, so the line runs again (never
      // billed twice); a preempted line first, so the batch's order (and its prefix groups) holds.
      if (err instanceof LinePreemptedError) run.pending.unshift(index);
      else {
        this.d.log.warn({ err, batchId: run.id, line: index }, 'a batch line did not run');
        run.pending.push(index);
      }
      return;
    } finally {
      run.live.delete(index);
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
