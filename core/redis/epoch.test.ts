// The Redis epoch on every primary of a cluster (core/redis/epoch.ts): a real 3-primary + 3-replica
// cluster where a primary that does NOT hold `mp:epoch` fails over to a replica that never got the
// epoch — the data loss the single key could not see — and the proxy's probe reports it. On one
// Redis nothing changes: one key.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownEpoch } from '../../proxy/billing/redis-identity.ts';
import { RedisProbe } from '../../proxy/billing/redis-probe.ts';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { startRedisCluster, type TestRedisCluster } from '../../test/helpers/redis-cluster.ts';
import { until } from '../../test/helpers/until.ts';
import { scanKeys, whenReady } from './client.ts';
import { EPOCH_KEY, readEpoch, SHARD_EPOCH_KEYS, uncoveredPrimaries } from './epoch.ts';

const run = promisify(execFile);
let cluster: TestRedisCluster;
let single: TestRedis;
const dirs: string[] = [];
const dataDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'mp-epoch-'));
  dirs.push(d);
  return d;
};
beforeAll(async () => {
  // aof: a single server even when MODELPLANE_TEST_REDIS=cluster (this file starts its own cluster).
  [cluster, single] = await Promise.all([startRedisCluster(), startRedis({ aof: true })]);
}, 120_000);
afterAll(async () => {
  await Promise.all([cluster?.stop(), single?.stop()]);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('the Redis epoch on a cluster', () => {
  it('one shard key in each block of 256 slots, as Redis itself places them; every primary holds some', async () => {
    const node = cluster.node(cluster.nodes[0]!.port);
    const slots = await Promise.all(
      SHARD_EPOCH_KEYS.map((k) => node.cluster('KEYSLOT', k) as Promise<number>),
    );
    expect(slots.map((s) => Math.floor(s / 256))).toEqual(SHARD_EPOCH_KEYS.map((_, i) => i));
    const redis = cluster.client();
    await whenReady(redis);
    expect(uncoveredPrimaries(redis)).toEqual([]);
  });

  it('a primary other than mp:epoch’s failing over to a replica that never got the epoch is seen by the probe', async () => {
    const redis = cluster.client();
    await whenReady(redis);
    // The victim: a primary that does not hold mp:epoch, its replica stopped and cut off before the
    // epoch is written, so when it takes over it has none of the epoch keys of its slots.
    const mainPrimary = await cluster.primaryOf(EPOCH_KEY);
    const primaryPorts = [...new Set(await Promise.all(SHARD_EPOCH_KEYS.map((k) => cluster.primaryOf(k))))];
    const victim = primaryPorts.find((p) => p !== mainPrimary)!;
    expect(victim).toBeDefined();
    const replica = await cluster.replicaOf(victim);
    cluster.pause(replica);
    await cluster.node(victim).client('KILL', 'TYPE', 'replica');

    const epoch = await knownEpoch(redis, dataDir());
    expect(epoch.matches).toBe(true);
    expect(await readEpoch(redis)).toBe(epoch.expected);
    let mismatches = 0;
    let backs = 0;
    let lastFound: string | null | undefined;
    const probe = new RedisProbe({
      redis,
      epoch: epoch.expected,
      matchedAtStart: true,
      foundAtStart: epoch.found,
      intervalMs: 100,
      timeoutMs: 5_000,
      onBack: () => {
        backs++;
      },
      onMismatch: (found) => {
        mismatches++;
        lastFound = found;
      },
    });
    try {
      await cluster.kill(victim);
      cluster.resume(replica);
      await cluster.waitForFailover(victim);
      await until(() => probe.mismatch !== null, 'the probe sees the lost epoch', 60_000);
      expect(mismatches).toBeGreaterThan(0);
      expect(lastFound).toBeNull();
      expect(probe.mismatch).toMatchObject({ expected: epoch.expected, found: null });
      // It lasts: the probe's cheap rounds (mp:epoch alone) do not end it.
      const seen = mismatches;
      await until(() => mismatches >= seen + 15, 'the probe keeps reporting it', 30_000);
      expect(probe.mismatch).not.toBeNull();
      expect(backs).toBe(0);
      // The one key the probe read before is still there: alone, it would have seen nothing.
      expect(await redis.get(EPOCH_KEY)).toBe(epoch.expected);
      // What the promoted replica lacks is exactly the shard keys of its slots.
      const missing = (await Promise.all(SHARD_EPOCH_KEYS.map(async (k) => [k, await redis.get(k)] as const)))
        .filter(([, v]) => v === null)
        .map(([k]) => k);
      expect(missing.length).toBeGreaterThan(0);
      for (const k of missing) expect(await cluster.primaryOf(k)).toBe(replica);
    } finally {
      probe.stop();
    }
  }, 180_000);
});

describe('a cluster upgraded from a release with one epoch key', () => {
  it('gets its shard keys from the first replica that knows the epoch; a later loss is then seen', async () => {
    const redis = cluster.client();
    await whenReady(redis);
    // As the previous release left it: mp:epoch alone, and the replica's file naming it.
    await redis.set(EPOCH_KEY, 'e-upgraded');
    await Promise.all([...SHARD_EPOCH_KEYS, '{mp:epoch}:shards'].map((k) => redis.del(k)));
    const dir = dataDir();
    writeFileSync(join(dir, 'redis-epoch'), 'e-upgraded');
    expect(await knownEpoch(redis, dir)).toEqual({
      expected: 'e-upgraded',
      found: 'e-upgraded',
      matches: true,
    });
    expect(new Set(await Promise.all(SHARD_EPOCH_KEYS.map((k) => redis.get(k))))).toEqual(
      new Set(['e-upgraded']),
    );
    // Written once: a shard key lost afterwards is a loss, not "not written yet".
    await redis.del(SHARD_EPOCH_KEYS[17]!);
    expect(await readEpoch(redis)).toBeNull();
    expect((await knownEpoch(redis, dir)).matches).toBe(false);
    expect(await redis.get(SHARD_EPOCH_KEYS[17]!)).toBeNull();
  });
});

describe('a cluster resharded', () => {
  it('the epoch keys move with their slots (the probe still matches); a primary left holding none is named', async () => {
    const c2 = await startRedisCluster();
    try {
      const redis = c2.client();
      await whenReady(redis);
      const epoch = await knownEpoch(redis, dataDir());
      let uncovered: string[] | null = null;
      const probe = new RedisProbe({
        redis,
        epoch: epoch.expected,
        matchedAtStart: true,
        foundAtStart: epoch.found,
        intervalMs: 100,
        timeoutMs: 5_000,
        onBack: () => {},
        onMismatch: () => {},
        onUncovered: (p) => {
          uncovered = p;
        },
      });
      try {
        // Move every slot of one primary to another except the ones after its last epoch key.
        const any = c2.node(c2.nodes[0]!.port);
        const epochSlots = await Promise.all(
          [EPOCH_KEY, ...SHARD_EPOCH_KEYS].map((k) => any.cluster('KEYSLOT', k) as Promise<number>),
        );
        const ranges = (await any.cluster('SLOTS')).sort((a, b) => a[0] - b[0]);
        const [from, to, [, port, id]] = [ranges[0]![0], ranges[0]![1], ranges[0]![2]!];
        const target = ranges.find((r) => r[2]![1] !== port)![2]![2];
        const last = Math.max(...epochSlots.filter((s) => s >= from && s <= to));
        expect(last, 'an epoch key at the very end of the range leaves no tail to keep').toBeLessThan(to);
        await run(
          'redis-cli',
          [
            '--cluster',
            'reshard',
            `127.0.0.1:${port}`,
            '--cluster-from',
            id,
            '--cluster-to',
            target,
            '--cluster-slots',
            String(last - from + 1),
            '--cluster-yes',
          ],
          { maxBuffer: 64 * 1024 * 1024 },
        );
        const after = await any.cluster('SLOTS');
        const kept = after.filter((r) => r[2]![1] === port).map((r) => [r[0], r[1]]);
        expect(kept).toEqual([[last + 1, to]]);
        // The keys went with their slots: the probe reads every one and still matches.
        const moved = [EPOCH_KEY, ...SHARD_EPOCH_KEYS].filter(
          (_, i) => epochSlots[i]! >= from && epochSlots[i]! <= last,
        );
        expect(moved.length).toBeGreaterThan(0);
        for (const k of moved) expect(await c2.primaryOf(k)).not.toBe(port);
        expect(await readEpoch(redis)).toBe(epoch.expected);
        await until(
          () => uncovered !== null && uncovered.length > 0,
          'the probe names the uncovered primary',
          30_000,
        );
        expect(uncovered).toEqual([`127.0.0.1:${port}`]);
        expect(probe.mismatch).toBeNull();
      } finally {
        probe.stop();
      }
    } finally {
      await c2.stop();
    }
  }, 300_000);
});

describe('the Redis epoch on one Redis', () => {
  it('is one key, as before; a replica that knows it matches, one whose Redis lost it does not', async () => {
    const redis = single.client();
    const dir = dataDir();
    const epoch = await knownEpoch(redis, dir);
    expect(await scanKeys(redis, 'mp:epoch*')).toEqual([EPOCH_KEY]);
    expect(await scanKeys(redis, '{mp:epoch}*')).toEqual([]);
    expect(await readEpoch(redis)).toBe(epoch.expected);
    expect(uncoveredPrimaries(redis)).toEqual([]);
    await redis.del(EPOCH_KEY);
    expect(await knownEpoch(redis, dir)).toEqual({ expected: epoch.expected, found: null, matches: false });
  });
});
