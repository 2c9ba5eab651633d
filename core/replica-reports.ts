// What each proxy replica owes Redis, as it last said (issue 22): a replica publishes, every few
// seconds, the settlements its journal holds unacknowledged (count and amount per account, the
// oldest's age) under `mp:replica:<name>`, with no expiry — so after a replica dies its last word
// stays, and `modelplane ledger check` can name a replica that owes money and has gone silent (its
// volume may be gone: those charges are then lost, and the check says how much). A replica that
// stops cleanly with nothing owed removes its report.
import { type Redis, scanKeys } from './redis-client.ts';

const PREFIX = 'mp:replica:';

export interface ReplicaReport {
  /** host and data directory (stable across restarts on the same volume). */
  replica: string;
  /** Unacknowledged settlements in its journal. */
  owed: number;
  /** Per account: how many, and their cost in nano-units of the account's currency. */
  byAccount: Record<string, { count: number; nano: number }>;
  /** Age of the oldest unacknowledged settlement when reported (ms), or null. */
  oldestAgeMs: number | null;
  reportedAtMs: number;
  /** How often it reports: a report much older than this is a replica gone silent. */
  everyMs: number;
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
