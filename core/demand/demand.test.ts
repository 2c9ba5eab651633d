// The demand the proxies publish (core/demand/demand.ts) against a real redis-server: the operator reads
// the sum over replicas; a replica that stops publishing (dead) drops out when its hash expires;
// one that shuts down withdraws at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { DemandStore, decodeDemand, encodeDemand } from './demand.ts';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

const d = (inFlight: number, queued: number, held: number) => ({ inFlight, queued, held });

describe('published demand', () => {
  it('round-trips its encoding and refuses a malformed value', () => {
    expect(decodeDemand(encodeDemand(d(3, 1, 2)))).toEqual(d(3, 1, 2));
    expect(decodeDemand('1 2')).toBeNull();
    expect(decodeDemand('1 -2 3')).toBeNull();
  });

  it('sums the replicas per model; a dead replica expires, a stopped one withdraws', async () => {
    const store = new DemandStore(redis.client());
    await store.publish('p1', new Map([['A', d(2, 0, 1)]]), 60_000);
    await store.publish(
      'p2',
      new Map([
        ['A', d(1, 3, 1)],
        ['B', d(0, 0, 0)],
      ]),
      300,
    );
    await store.publish('p3', new Map([['B', d(4, 0, 0)]]), 60_000);
    let read = await store.read();
    expect(read.proxies).toBe(3);
    expect(read.byModel.get('A')).toEqual(d(3, 3, 2));
    expect(read.byModel.get('B')).toEqual(d(4, 0, 0));
    // p2 stops publishing (a killed replica): its hash expires and its demand is gone.
    await new Promise((r) => setTimeout(r, 400));
    read = await store.read();
    expect(read.proxies).toBe(2);
    expect(read.byModel.get('A')).toEqual(d(2, 0, 1));
    await store.withdraw('p3');
    read = await store.read();
    expect(read.byModel.has('B')).toBe(false);
    // A publish replaces the replica's whole hash: a model it no longer has demand for leaves.
    await store.publish('p1', new Map(), 60_000);
    expect((await store.read()).byModel.size).toBe(0);
  });
});
