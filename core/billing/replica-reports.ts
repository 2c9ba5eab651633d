// What each proxy replica owes Redis, as it last said (issue 22): a replica publishes, every few
// seconds, the settlements its journal holds unacknowledged (count and amount per account, the
// oldest's age) under `mp:replica:<name>`, with no expiry — so after a replica dies its last word
// stays, and `modelplane ledger check` can name a replica that owes money and has gone silent (its
// volume may be gone: those charges are then lost, and the check says how much). A replica that
// stops cleanly with nothing owed removes its report.

import { perItem, type Redis, scanKeys } from '../redis/client.ts';
import { accountKeys } from '../redis/keyspace.ts';

const PREFIX = 'mp:replica:';

export interface ReplicaReport {
  /** host and data directory (stable across restarts on the same volume). */
  replica: string;
  /** Unacknowledged settlements in its journal (of delivered calls: in the file). */
  owed: number;
  /** Per account: how many, and their cost in nano-units of the account's currency. */
  byAccount: Record<string, { count: number; nano: number }>;
  /**
   * Settlements whose journal line a full disk has not taken: their calls are not answered until
   * Redis has them, so a replica gone silent owes none of them (absent: none, or an older replica).
   */
  unanswered?: { count: number; byAccount: Record<string, { count: number; nano: number }> };
  /** Age of the oldest unacknowledged settlement when reported (ms), or null. */
  oldestAgeMs: number | null;
  reportedAtMs: number;
  /** How often it reports: a report much older than this is a replica gone silent. */
  everyMs: number;
  /** The settlements Redis acknowledged to it lately (see AcknowledgedWrite); absent: none kept. */
  recent?: AcknowledgedWrite[];
}

/**
 * A settlement Redis acknowledged to a replica (which then dropped it from its journal). Redis
 * replication is asynchronous: a primary that dies before its replica has the write loses it, the
 * promoted replica is self-consistent (balance and stream agree), and nothing in Redis says a
 * write is missing. So each replica keeps what was acknowledged in its last minutes and reports it;
 * `ledger check` looks each one up by its exactly-once record (`done:<op>`, kept a day) and names
 * every one Redis no longer has. A witness for a window, not a record: PostgreSQL (issue 23, the
 * journal) is what keeps every write.
 */
export interface AcknowledgedWrite {
  accountId: string;
  /** Its exactly-once operation: `settle:<holdId>` or `settle-batch:<leaseId>:<batchId>`. */
  op: string;
  /** The calls in it and their true cost (nano). */
  count: number;
  nano: number;
  atMs: number;
}

/** How long a replica keeps acknowledged writes in its report, and at most how many. */
export const RECENT_ACKS_MS = 5 * 60_000;
export const RECENT_ACKS_KEPT = 2_000;

/** Acknowledged writes (by any replica's report) that Redis has no trace of now. */
export async function lostAcknowledged(
  redis: Redis,
  reports: readonly ReplicaReport[],
): Promise<{ replica: string; write: AcknowledgedWrite }[]> {
  const all = reports.flatMap((r) => (r.recent ?? []).map((write) => ({ replica: r.replica, write })));
  const found = await perItem(redis, all, (p, { write }) =>
    p.exists(accountKeys(write.accountId).done(write.op)),
  );
  return all.filter((_, i) => {
    const [err, n] = found[i]!;
    if (err) throw err;
    return n === 0;
  });
}

export async function publishReplicaReport(redis: Redis, r: ReplicaReport): Promise<void> {
  await redis.set(`${PREFIX}${r.replica}`, JSON.stringify(r));
}

export async function removeReplicaReport(redis: Redis, replica: string): Promise<void> {
  await redis.del(`${PREFIX}${replica}`);
}

export async function replicaReports(redis: Redis): Promise<ReplicaReport[]> {
  const out: ReplicaReport[] = [];
  // Every primary's share: on a cluster these keys are spread over the slots.
  for (const k of await scanKeys(redis, `${PREFIX}*`)) {
    const v = await redis.get(k);
    if (v !== null) out.push(JSON.parse(v) as ReplicaReport);
  }
  return out.sort((a, b) => a.replica.localeCompare(b.replica));
}

/** A report this old (several missed reports) is a replica that stopped without handing over. */
export function isSilent(r: ReplicaReport, nowMs: number): boolean {
  return nowMs - r.reportedAtMs > Math.max(5 * r.everyMs, 5_000);
}
