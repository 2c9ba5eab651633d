// Which Redis is this? A random epoch written once into Redis (`mp:epoch`) and remembered by every
// proxy replica in its data directory. A Redis restarted without its data (no AOF/RDB, a wiped
// volume, a failover to an empty replica) or another server behind the same address has no epoch,
// or a different one: the replicas notice (proxy/billing/redis-probe.ts), stop serving and keep
// what they owe in their journals instead of writing it against accounts that are not there, and
// say so in Redis itself (`mp:fault:epoch:<replica>`, short-lived, refreshed while it lasts), so
// `modelplane ledger check` fails naming them even though the accounts it would check are gone.
//
// On a Redis Cluster one key lives on one shard, and another primary failing over to an empty
// replica would go unseen. So the epoch is also written under SHARD_EPOCH_KEYS: one key per block
// of 256 slots (64 keys, each with a hash tag chosen for a slot in its block), so every primary
// that serves a block of 256 contiguous slots holds at least one, and a probe reads them all. The
// keys move with their slots when the cluster is resharded (MIGRATE carries keys), so no re-check
// is needed for that; a primary serving no epoch slot at all (under 256 slots, scattered) is named
// by uncoveredPrimaries() so the proxy can say so. `{mp:epoch}:shards`, in mp:epoch's own slot,
// marks that the shard keys were written: until it is there (a cluster upgraded from a release
// without them) a missing shard key means "not yet written", not "lost".
import calculateSlot from 'cluster-key-slot';
import { isCluster, type Redis, scanKeys } from './client.ts';
import { keyPerSlotBlock } from './slot-blocks.ts';

export const EPOCH_KEY = 'mp:epoch';
const SHARDS_MARK = '{mp:epoch}:shards';
const FAULT_PREFIX = 'mp:fault:epoch:';

/** `mp:epoch:{<n>}` for the smallest n whose slot falls in each block of 256 slots, in block order. */
export const SHARD_EPOCH_KEYS: readonly string[] = keyPerSlotBlock((n) => `mp:epoch:{${n}}`);

/** What a replica reports when Redis is not the one it knew. */
export interface EpochFault {
  replica: string;
  /** The epoch the replica knew. */
  expected: string;
  /** The epoch this Redis has (null: none, it lost its data). */
  found: string | null;
  /** Settlements the replica owes and keeps in its journal meanwhile. */
  owed: number;
  sinceMs: number;
}

/**
 * The epoch Redis has: on one Redis, `mp:epoch`. On a cluster, `mp:epoch` when every shard key
 * agrees with it, else the first that does not (null: missing — its primary lost its data);
 * `shards: false` reads `mp:epoch` alone (the probe's cheap rounds).
 */
export async function readEpoch(redis: Redis, opts: { shards?: boolean } = {}): Promise<string | null> {
  if (!isCluster(redis)) return redis.get(EPOCH_KEY);
  // One slot (the mark's hash tag is mp:epoch), so one MGET.
  const [main, mark] = await redis.mget(EPOCH_KEY, SHARDS_MARK);
  if (main === null || main === undefined) return null;
  if (mark === null || opts.shards === false) return main;
  // One GET per key: they are in 64 slots over every primary (a cluster pipeline takes one slot).
  const shards = await Promise.all(SHARD_EPOCH_KEYS.map((k) => redis.get(k)));
  const odd = shards.find((v) => v !== main);
  return odd === undefined ? main : odd;
}

/** Writes `candidate` as the epoch unless one is there; returns the epoch Redis has now. */
export async function claimEpoch(redis: Redis, candidate: string): Promise<string> {
  await redis.set(EPOCH_KEY, candidate, 'NX');
  const now = await redis.get(EPOCH_KEY);
  if (now === null) throw new Error(`${EPOCH_KEY} vanished right after it was written`);
  await writeShardEpochs(redis, now);
  return now;
}

/**
 * On a cluster whose shard keys were never written (a fresh claim, or an upgrade from a release
 * without them), writes them with `epoch` — the one `mp:epoch` has: callers have just read it —
 * then the mark. A shard key written then is one that was never there; after the mark, a missing
 * one is a loss readEpoch reports. Each is written only if absent: one left from an older epoch
 * (its primary kept its data when mp:epoch's lost it) stays, and readEpoch names it.
 */
export async function writeShardEpochs(redis: Redis, epoch: string): Promise<void> {
  if (!isCluster(redis) || (await redis.get(SHARDS_MARK)) !== null) return;
  await Promise.all(SHARD_EPOCH_KEYS.map((k) => redis.set(k, epoch, 'NX')));
  await redis.set(SHARDS_MARK, String(SHARD_EPOCH_KEYS.length));
}

/**
 * Primaries (`host:port`) that serve slots but hold no epoch key: their losing their data would go
 * unseen. Read from the client's slot map (refreshed as slots move). Empty on one Redis and on any
 * cluster whose primaries each serve 256 contiguous slots or more.
 */
export function uncoveredPrimaries(redis: Redis): string[] {
  if (!isCluster(redis)) return [];
  const owners = new Set<string>();
  for (const nodes of redis.slots) if (nodes?.[0]) owners.add(nodes[0]);
  for (const k of [EPOCH_KEY, ...SHARD_EPOCH_KEYS]) {
    const holder = redis.slots[calculateSlot(k)]?.[0];
    if (holder) owners.delete(holder);
  }
  return [...owners].sort();
}

export async function reportEpochFault(redis: Redis, f: EpochFault, ttlMs: number): Promise<void> {
  await redis.set(`${FAULT_PREFIX}${f.replica}`, JSON.stringify(f), 'PX', ttlMs);
}

/** Every replica's current report that this Redis is not the one it knew. */
export async function epochFaults(redis: Redis): Promise<EpochFault[]> {
  const out: EpochFault[] = [];
  // Every primary's share: on a cluster these keys are spread over the slots.
  for (const k of await scanKeys(redis, `${FAULT_PREFIX}*`)) {
    const v = await redis.get(k);
    if (v !== null) out.push(JSON.parse(v) as EpochFault);
  }
  return out.sort((a, b) => a.replica.localeCompare(b.replica));
}
