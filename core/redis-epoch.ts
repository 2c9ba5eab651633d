// Which Redis is this? A random epoch written once into Redis (`mp:epoch`) and remembered by every
// proxy replica in its data directory. A Redis restarted without its data (no AOF/RDB, a wiped
// volume, a failover to an empty replica) or another server behind the same address has no epoch,
// or a different one: the replicas notice (proxy/billing/redis-probe.ts), stop serving and keep
// what they owe in their journals instead of writing it against accounts that are not there, and
// say so in Redis itself (`mp:fault:epoch:<replica>`, short-lived, refreshed while it lasts), so
// `modelplane ledger check` fails naming them even though the accounts it would check are gone.
import { type Redis, scanKeys } from './redis-client.ts';

export const EPOCH_KEY = 'mp:epoch';
const FAULT_PREFIX = 'mp:fault:epoch:';

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

export async function readEpoch(redis: Redis): Promise<string | null> {
  return redis.get(EPOCH_KEY);
}

/** Writes `candidate` as the epoch unless one is there; returns the epoch Redis has now. */
export async function claimEpoch(redis: Redis, candidate: string): Promise<string> {
  await redis.set(EPOCH_KEY, candidate, 'NX');
  const now = await redis.get(EPOCH_KEY);
  if (now === null) throw new Error(`${EPOCH_KEY} vanished right after it was written`);
  return now;
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
