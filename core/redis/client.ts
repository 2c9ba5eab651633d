// The one place a Redis connection is made (docs/redis-cluster.md "Running on Redis Cluster").
// `REDIS_URL` names either one server (`redis://host:port`, `rediss://...`) or a cluster by some of
// its nodes (`redis+cluster://host1:port1,host2:port2`, `rediss+cluster://` for TLS; a user and
// password in the first address apply to every node). Everything else takes `Redis` from here: the
// union keeps the type checker honest about what a cluster cannot do (a keyspace SCAN reaches one
// node, a pipeline must stay in one slot, pub/sub counts one node's subscribers) — those go through
// the helpers below.
import calculateSlot from 'cluster-key-slot';
import { Cluster, type ClusterOptions, type RedisOptions, Redis as Single } from 'ioredis';

export type Redis = Single | Cluster;

/** Where REDIS_URL points, parsed once (core/config/values.ts). */
export type RedisTarget =
  | { kind: 'single'; url: string }
  | {
      kind: 'cluster';
      nodes: { host: string; port: number }[];
      tls: boolean;
      username?: string;
      password?: string;
    };

const CLUSTER_SCHEMES = ['redis+cluster:', 'rediss+cluster:'];

/** Parses REDIS_URL; throws a message naming what is wrong (config turns it into a start error). */
export function parseRedisTarget(url: string): RedisTarget {
  const scheme = url.slice(0, url.indexOf('//'));
  if (!CLUSTER_SCHEMES.includes(scheme)) return { kind: 'single', url };
  const rest = url.slice(scheme.length + 2).replace(/\/+$/, '');
  const at = rest.lastIndexOf('@');
  const auth = at < 0 ? '' : rest.slice(0, at);
  const list = at < 0 ? rest : rest.slice(at + 1);
  const nodes = list.split(',').map((entry) => {
    const m = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(entry.trim());
    if (m === null || Number(m[2]) > 65535)
      throw new Error(`"${entry}" is not host:port (a cluster is redis+cluster://host1:port1,host2:port2)`);
    return { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) };
  });
  const colon = auth.indexOf(':');
  const username = decodeURIComponent(colon < 0 ? auth : auth.slice(0, colon));
  const password = colon < 0 ? undefined : decodeURIComponent(auth.slice(colon + 1));
  return {
    kind: 'cluster',
    nodes,
    tls: scheme === 'rediss+cluster:',
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
  };
}

/** What a caller may tune; the cluster client applies it to each node's connection. */
export type ConnectOptions = Pick<
  RedisOptions,
  | 'maxRetriesPerRequest'
  | 'enableAutoPipelining'
  | 'commandTimeout'
  | 'lazyConnect'
  | 'retryStrategy'
  | 'connectionName'
  | 'enableOfflineQueue'
>;

/** A connection to the server or cluster REDIS_URL names. */
export function connectRedis(url: string | RedisTarget, opts: ConnectOptions = {}): Redis {
  const target = typeof url === 'string' ? parseRedisTarget(url) : url;
  if (target.kind === 'single') return new Single(target.url, opts);
  const { retryStrategy, enableAutoPipelining, lazyConnect, enableOfflineQueue, ...perNode } = opts;
  const clusterOptions: ClusterOptions = {
    // Subscribers follow each channel to the primary that owns its slot (SSUBSCRIBE): see publish().
    shardedSubscribers: true,
    ...(enableAutoPipelining !== undefined ? { enableAutoPipelining } : {}),
    ...(lazyConnect !== undefined ? { lazyConnect } : {}),
    ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
    ...(retryStrategy !== undefined ? { clusterRetryStrategy: retryStrategy } : {}),
    // A failover moves slots: commands sent meanwhile wait and follow the new owner.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    redisOptions: {
      ...perNode,
      ...(target.username ? { username: target.username } : {}),
      ...(target.password ? { password: target.password } : {}),
      ...(target.tls ? { tls: {} } : {}),
    },
  };
  return new Cluster(target.nodes, clusterOptions);
}

export const isCluster = (redis: Redis): redis is Cluster => redis instanceof Cluster;

/** The servers that hold keys: every primary of a cluster, or the one server. */
export function primaries(redis: Redis): Single[] {
  return isCluster(redis) ? redis.nodes('master') : [redis];
}

/**
 * A cluster client knows its nodes only once it has read the slot map: a fresh one has none, and
 * primaries() would be empty (a scan of "every primary" that finds nothing). Waits for that.
 */
export async function whenReady(redis: Redis): Promise<void> {
  if (!isCluster(redis) || redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const ready = () => {
      redis.off('end', ended);
      resolve();
    };
    const ended = () => {
      redis.off('ready', ready);
      reject(new Error('the Redis Cluster connection ended before it was ready'));
    };
    redis.once('ready', ready);
    redis.once('end', ended);
  });
}

/**
 * Every key matching `pattern`, from every primary (a keyspace SCAN on a cluster reaches one node).
 * A key may be listed twice while a slot moves; callers treat the list as a set.
 */
export async function scanKeys(redis: Redis, pattern: string, count = 200): Promise<string[]> {
  const found = new Set<string>();
  await whenReady(redis);
  for (const node of primaries(redis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', count);
      for (const k of keys) found.add(k);
      cursor = next;
    } while (cursor !== '0');
  }
  return [...found];
}

/**
 * PUBLISH on one server, SPUBLISH on a cluster: a sharded message is kept to the shard that owns
 * the channel's slot, where every subscriber of the channel is connected (shardedSubscribers), so
 * the count returned covers all of them — plain PUBLISH on a cluster counts only the subscribers of
 * the node that received it, and announcements wait for that many acknowledgements.
 */
export function publish(redis: Redis, channel: string, message: string): Promise<number> {
  return isCluster(redis)
    ? (redis.spublish(channel, message) as Promise<number>)
    : redis.publish(channel, message);
}

/** SUBSCRIBE on one server, SSUBSCRIBE (one call per channel: a call stays in one slot) on a cluster. */
export async function subscribe(subscriber: Redis, ...channels: string[]): Promise<void> {
  if (!isCluster(subscriber)) {
    await subscriber.subscribe(...channels);
    return;
  }
  for (const channel of channels) await subscriber.ssubscribe(channel);
}

export type MessageHandler = (channel: string, message: string) => void;

/** Listens to the messages subscribe() brought: 'message' on one server, 'smessage' on a cluster. */
export function onMessage(subscriber: Redis, handler: MessageHandler): void {
  subscriber.on(isCluster(subscriber) ? 'smessage' : 'message', handler);
}

export function offMessage(subscriber: Redis, handler: MessageHandler): void {
  subscriber.off(isCluster(subscriber) ? 'smessage' : 'message', handler);
}

/**
 * The server that holds `key`: the primary owning its slot on a cluster. For keyless commands that
 * are about one key's server — WAIT after a settle must ask the primary that took the write — and
 * for those whose key the client cannot find (XGROUP CREATE: with auto-pipelining it went to the
 * slot of the word CREATE). The slot is computed here, not asked of a node: CLUSTER KEYSLOT went
 * to an arbitrary node, a dead one during a failover, failing accounts on healthy shards (issue 38).
 */
export async function serverOf(redis: Redis, key: string): Promise<Single> {
  if (!isCluster(redis)) return redis;
  await whenReady(redis);
  const slot = calculateSlot(key);
  const owner = redis.slots[slot]?.[0];
  const node = redis.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === owner);
  if (node === undefined) throw new Error(`no primary known for slot ${slot} (the cluster is changing)`);
  return node;
}

/**
 * Which shard holds `key` now, by name (`host:port` of its slot's primary on a cluster, from the
 * client's slot map; `redis` on one server): faults that one shard has are kept to its accounts.
 */
export function shardOf(redis: Redis, key: string): string {
  if (!isCluster(redis)) return 'redis';
  return redis.slots[calculateSlot(key)]?.[0] ?? 'unknown';
}

/** A second connection to the same server or cluster with other options (its own queue, timeouts). */
export function duplicateRedis(redis: Redis, opts: ConnectOptions): Redis {
  if (!isCluster(redis)) return redis.duplicate(opts);
  const { retryStrategy, enableAutoPipelining, lazyConnect, enableOfflineQueue, ...perNode } = opts;
  return redis.duplicate(undefined, {
    ...redis.options,
    ...(enableAutoPipelining !== undefined ? { enableAutoPipelining } : {}),
    ...(lazyConnect !== undefined ? { lazyConnect } : {}),
    ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
    ...(retryStrategy !== undefined ? { clusterRetryStrategy: retryStrategy } : {}),
    redisOptions: { ...redis.options.redisOptions, ...perNode },
  });
}

type Chain = ReturnType<Single['pipeline']>;

/**
 * One command per item, answered in order: one pipeline on one server; on a cluster, where a
 * pipeline must stay on one node, one small pipeline per item, all sent at once.
 */
export async function perItem<T>(
  redis: Redis,
  items: readonly T[],
  add: (p: Chain, item: T) => unknown,
): Promise<[Error | null, unknown][]> {
  if (!isCluster(redis)) {
    const p = redis.pipeline();
    for (const item of items) add(p, item);
    return (await p.exec()) ?? [];
  }
  const answers = await Promise.all(
    items.map((item) => {
      const p = redis.pipeline();
      add(p, item);
      return p.exec();
    }),
  );
  return answers.flatMap((a) => a ?? []);
}

/**
 * Writes that belong together but live in different slots (an account's hash and a user's): one
 * MULTI on one server; on a cluster, where a transaction cannot span slots, each step (the
 * commands on one key) as its own MULTI, in the order given — callers order the steps so a crash
 * between two leaves nothing that grants more than before (see core/accounts/team.ts).
 */
export async function writeSteps(redis: Redis, steps: readonly ((m: Chain) => unknown)[]): Promise<void> {
  const groups = isCluster(redis) ? steps.map((s) => [s]) : [steps];
  for (const group of groups) {
    const m = redis.multi();
    for (const step of group) step(m as Chain);
    for (const [err] of (await m.exec()) ?? []) if (err) throw err;
  }
}
