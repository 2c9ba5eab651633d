import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { Accounts } from '../accounts.ts';
import { Metering } from './metering.ts';
import { startHoldSweeper, sweepAllExpiredHolds } from './sweeper.ts';

describe('hold sweeper', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => redis.stop());

  it('releases expired holds of every account, and leaves live holds alone', async () => {
    const r = redis.client();
    let now = 1_000_000;
    const metering = new Metering(r, { now: () => now });
    const accounts = new Accounts(r);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const a = await accounts.create({ name: `a${i}`, country: 'US' });
      ids.push(a.id);
      await metering.topUp({ accountId: a.id, topUpId: `t${i}`, amount: 1000 });
      await metering.reserve({ accountId: a.id, holdId: 'crashed', min: 100, max: 400, ttlMs: 1_000 });
      await metering.reserve({ accountId: a.id, holdId: 'live', min: 100, max: 100, ttlMs: 60_000 });
    }
    expect(await sweepAllExpiredHolds(r, metering)).toBe(0);
    now += 5_000;
    expect(await sweepAllExpiredHolds(r, metering)).toBe(5);
    for (const id of ids)
      expect(await metering.balance(id)).toEqual({ balance: 1000, held: 100, available: 900 });
  });

  it('runs on a timer and reports what it released', async () => {
    const r = redis.client();
    await r.flushdb();
    let now = 5_000_000;
    const metering = new Metering(r, { now: () => now });
    const a = await new Accounts(r).create({ name: 'timer', country: 'US' });
    await metering.topUp({ accountId: a.id, topUpId: 't', amount: 500 });
    await metering.reserve({ accountId: a.id, holdId: 'h', min: 500, max: 500, ttlMs: 10 });
    now += 100;
    const released = await new Promise<number>((resolve) => {
      const stop = startHoldSweeper(r, metering, {
        intervalMs: 20,
        onReleased: (n) => {
          stop();
          resolve(n);
        },
      });
    });
    expect(released).toBe(1);
    expect((await metering.balance(a.id)).available).toBe(500);
  });
});
