// CreditLeases' settle batching on real Redis: a tick's settles share one batch, settles that
// arrive during a batch's round trip wait for the next tick (not a batch per round trip), and
// quiesce drains everything, late arrivals included.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Metering, type UsageRecord } from '../../core/billing/index.ts';
import { LeaseMetering } from '../../core/billing/leases.ts';
import { newId } from '../../core/ids.ts';
import { recomputeBalanceFromStream } from '../../core/usage/usage.ts';
import { redisForFile } from '../../test/helpers/redis-per-file.ts';
import { until } from '../../test/helpers/until.ts';
import { CreditLeases } from './leases.ts';
import { Outbox } from './outbox.ts';
import { SettlementJournal } from './settlement-journal.ts';

const usage: UsageRecord = {
  keyId: 'k',
  model: 'Org/Chat-1',
  kind: 'chat',
  inputTokens: 3,
  cachedTokens: 0,
  outputTokens: 2,
  requestId: 'req',
};

/** An outbox whose settleBatch calls are recorded (size, time) and can be held in flight. */
class GatedOutbox extends Outbox {
  batches: number[] = [];
  sentAt: number[] = [];
  private gate: Promise<void> | null = null;

  /** Batches sent from now on wait until the returned function is called. */
  hold(): () => void {
    let open!: () => void;
    this.gate = new Promise<void>((r) => {
      open = r;
    });
    return () => {
      this.gate = null;
      open();
    };
  }

  override async settleBatch(a: Parameters<Outbox['settleBatch']>[0]) {
    this.batches.push(a.records.length);
    this.sentAt.push(performance.now());
    if (this.gate) await this.gate;
    return super.settleBatch(a);
  }
}

describe('credit lease batching', () => {
  const r = redisForFile();

  async function setup(flushMs: number) {
    const accountId = newId('acct');
    await new Metering(r.redis).topUp({ accountId, topUpId: newId('top'), amount: 1_000_000_000 });
    const { journal } = SettlementJournal.open(mkdtempSync(join(tmpdir(), 'mp-leases-')));
    const metering = new GatedOutbox({
      journal,
      redis: r.redis,
      waitReplicas: 0,
      waitTimeoutMs: 1_000,
      onError: (err) => {
        throw err;
      },
    });
    const leases = new CreditLeases({
      leases: new LeaseMetering(r.redis),
      outbox: metering,
      ttlMs: 60_000,
      maxLease: 1_000_000,
      idleMs: 60_000,
      flushMs,
      flushMax: 64,
      onError: (err) => {
        throw err;
      },
    });
    let n = 0;
    const settleSome = (count: number) => {
      for (let i = 0; i < count; i++) {
        if (!leases.tryCarve(accountId, 1_000)) throw new Error('lease could not cover the carve');
        leases.settle(accountId, { holdId: `h${n++}`, carved: 1_000, cost: 10, usage });
      }
    };
    // The first carve (there is no lease yet) starts the lease's growth; every carve below waits
    // for it to be covered.
    if (leases.tryCarve(accountId, 1_000)) leases.uncarve(accountId, 1_000);
    await until(() => leases.freeOf(accountId) >= 50_000, 'the lease grew');
    return { accountId, metering, leases, settleSome };
  }

  it('settles arriving during a batch round trip wait for the next tick instead of a batch of their own', async () => {
    const FLUSH_MS = 50;
    const { accountId, metering, leases, settleSome } = await setup(FLUSH_MS);
    settleSome(10);
    await until(() => metering.batches.length === 1); // the tick sends them as one batch
    expect(metering.batches).toEqual([10]);

    // Hold the next batch in flight while more settles arrive.
    const release = metering.hold();
    settleSome(5);
    await until(() => metering.batches.length === 2);
    settleSome(7); // during the round trip
    const arrivedAt = performance.now();
    release();
    await until(() => metering.batches.length === 3);
    // The 7 were not sent straight after the batch came back, but on their own tick (a slow
    // machine only delays the tick, so this cannot fail by timing).
    expect(metering.batches).toEqual([10, 5, 7]);
    expect(metering.sentAt[2]! - arrivedAt).toBeGreaterThanOrEqual(FLUSH_MS - 2);

    await leases.close();
    expect(await recomputeBalanceFromStream(r.redis, accountId)).toBe(1_000_000_000 - 22 * 10);
  });

  it('quiesce drains the queue, settles that arrive while it runs included', async () => {
    const { accountId, metering, leases, settleSome } = await setup(10_000);
    settleSome(4);
    const release = metering.hold();
    const done = leases.quiesce();
    await until(() => metering.batches.length === 1);
    settleSome(3); // while quiesce's first batch is in flight
    release();
    await done;
    expect(metering.batches).toEqual([4, 3]);
    await leases.close();
    expect(await recomputeBalanceFromStream(r.redis, accountId)).toBe(1_000_000_000 - 7 * 10);
  });
});
