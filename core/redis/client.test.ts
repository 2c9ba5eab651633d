// REDIS_URL parsing, and what a cluster needs done differently, proved on a real 3-primary +
// 3-replica Redis Cluster: scans reach every primary, sharded announcements count every subscriber
// whatever node they came through, pipelines and transactions that span slots still run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisCluster, type TestRedisCluster } from '../../test/helpers/redis-cluster.ts';
import { until } from '../../test/helpers/until.ts';
import { loadConfig } from '../config/index.ts';
import {
  isCluster,
  onMessage,
  parseRedisTarget,
  perItem,
  primaries,
  publish,
  type Redis,
  scanKeys,
  serverOf,
  subscribe,
  writeSteps,
} from './client.ts';

describe('REDIS_URL', () => {
  it.each([
    ['redis://127.0.0.1:6379', { kind: 'single', url: 'redis://127.0.0.1:6379' }],
    [
      'rediss://user:pw@redis.example:6380/2',
      { kind: 'single', url: 'rediss://user:pw@redis.example:6380/2' },
    ],
    [
      'redis+cluster://10.0.0.1:7000,10.0.0.2:7001',
      {
        kind: 'cluster',
        tls: false,
        nodes: [
          { host: '10.0.0.1', port: 7000 },
          { host: '10.0.0.2', port: 7001 },
        ],
      },
    ],
    [
      'rediss+cluster://default:s%40cret@r1.example:6379,[::1]:6380/',
      {
        kind: 'cluster',
        tls: true,
        username: 'default',
        password: 's@cret',
        nodes: [
          { host: 'r1.example', port: 6379 },
          { host: '::1', port: 6380 },
        ],
      },
    ],
  ])('%s', (url, want) => {
    expect(parseRedisTarget(url)).toEqual(want);
  });

  it.each([
    ['redis+cluster://', '"" is not host:port'],
    ['redis+cluster://h1:7000,h2', '"h2" is not host:port'],
    ['redis+cluster://h1:99999', '"h1:99999" is not host:port'],
  ])('%s is refused at start, naming the bad address', (url, message) => {
    expect(() => loadConfig({ REDIS_URL: url, MODELPLANE_KEK: 'a'.repeat(64) })).toThrow(message);
    expect(() => loadConfig({ REDIS_URL: url, MODELPLANE_KEK: 'a'.repeat(64) })).toThrow('REDIS_URL');
  });
});

describe('on a Redis Cluster', () => {
  let cluster: TestRedisCluster;
  let redis: Redis;
  beforeAll(async () => {
    cluster = await startRedisCluster();
    redis = cluster.client();
    await redis.ping();
  });
  afterAll(async () => cluster?.stop());

  it('is a cluster of three primaries', () => {
    expect(isCluster(redis)).toBe(true);
    expect(primaries(redis)).toHaveLength(3);
  });

  it('scanKeys finds the keys of every primary', async () => {
    const keys = Array.from({ length: 60 }, (_, i) => `mp:scan-test:${i}`);
    for (const k of keys) await redis.set(k, '1');
    const holders = new Set(await Promise.all(keys.map((k) => cluster.primaryOf(k))));
    expect(holders.size).toBe(3); // the test means something: the keys are spread
    expect((await scanKeys(redis, 'mp:scan-test:*')).sort()).toEqual([...keys].sort());
    // A plain SCAN asks one node and misses the others' keys: what scanKeys is for.
    const [, one] = await primaries(redis)[0]!.scan('0', 'MATCH', 'mp:scan-test:*', 'COUNT', 1000);
    expect(one.length).toBeLessThan(keys.length);
  });

  it('KEY-6 an announcement counts every subscriber, whichever node each is connected through', async () => {
    const got: string[] = [];
    const subscribers = [cluster.client(), cluster.client(), cluster.client()];
    for (const s of subscribers) {
      onMessage(s, (channel, message) => got.push(`${channel} ${message}`));
      await subscribe(s, 'mp:keys:invalidated', 'mp:catalogue:changed');
    }
    expect(await publish(redis, 'mp:keys:invalidated', 'h1')).toBe(3);
    expect(await publish(redis, 'mp:catalogue:changed', 'm1')).toBe(3);
    await until(() => got.length === 6, 'every subscriber got both', 10_000);
    expect(got.sort()).toEqual([
      ...Array(3).fill('mp:catalogue:changed m1'),
      ...Array(3).fill('mp:keys:invalidated h1'),
    ]);
  });

  it('perItem reads keys of many slots in one call, answers in order', async () => {
    const ids = Array.from({ length: 30 }, (_, i) => `acct_${i}`);
    for (const id of ids) await redis.hset(`{a:${id}}:account`, 'name', id);
    const answers = await perItem(redis, ids, (p, id) => p.hget(`{a:${id}}:account`, 'name'));
    expect(answers.map(([err, v]) => (err ? err.message : v))).toEqual(ids);
  });

  it('writeSteps writes keys of two slots (a cross-slot MULTI is refused)', async () => {
    await expect(
      redis.multi().set('mp:user-accounts:u1', 'x').set('{a:z}:team', 'y').exec(),
    ).rejects.toThrow();
    await writeSteps(redis, [(m) => m.set('mp:user-accounts:u1', 'x'), (m) => m.set('{a:z}:team', 'y')]);
    expect(await redis.get('mp:user-accounts:u1')).toBe('x');
    expect(await redis.get('{a:z}:team')).toBe('y');
  });

  it('serverOf is the primary that holds the key (WAIT after a settle goes there)', async () => {
    const key = '{a:wait}:account';
    const node = await serverOf(redis, key);
    expect(node.options.port).toBe(await cluster.primaryOf(key));
    await redis.set(key, '1');
    // Its replica has the write: WAIT on the right primary counts it.
    expect(await node.call('WAIT', 1, 5_000)).toBe(1);
  });

  // Last: it kills a primary.
  it('KEY-6 subscribers follow a channel to the replica promoted when its primary dies', async () => {
    const channel = 'mp:accounts:changed';
    const got: string[] = [];
    const sub = cluster.client();
    onMessage(sub, (_, message) => got.push(message));
    await subscribe(sub, channel);
    expect(await publish(redis, channel, 'before')).toBe(1);
    await until(() => got.includes('before'), 'the message before the failover');
    const primary = await cluster.primaryOf(channel);
    await cluster.kill(primary);
    await cluster.waitForFailover(primary);
    // Receivers counted again once the subscriber is back on the channel's new primary.
    let receivers = 0;
    await until(
      async () => {
        receivers = await publish(redis, channel, 'after').catch(() => 0);
        return receivers === 1;
      },
      'a subscriber on the promoted replica',
      30_000,
    );
    await until(() => got.includes('after'), 'the message after the failover', 10_000);
  }, 90_000);
});
