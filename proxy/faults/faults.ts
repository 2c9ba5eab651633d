// The faults a replica survives without crashing but cannot bill through, as data: one entry each.
// Modelled on Kubernetes' conditions — a fault's `type` names it, `holds` is its status (read from
// the live sources, cheaply: the /v1 gate reads it on every request), `message` says it in words
// for /readyz's `reasons` and the operator. Beside those, what the fault does to the replica: the
// /readyz check it turns false, the refusal it gives (billable calls only, or every /v1 request),
// the gauge an alert reads (charts/modelplane/files/prometheus-rules.yaml), and its runbook row.
// ./board.ts reads the table for readiness, refusal and /readyz; ./fault-metrics.ts for the gauges;
// Billing only hands it the sources. A new fault is a new entry here, and nothing else.
//
// The order is the order /readyz gives its reasons in, and the first that holds gives the refusal.
import { type ApiError, billingUnavailable, storeLostData } from '../../core/errors.ts';

/** What the faults are read from: the replica's Redis probe, outbox and settlement journal. */
export interface FaultSources {
  /** Redis is not the one this replica knew (its epoch is missing or another); null while it is. */
  redisMismatch(): { expected: string; found: string | null } | null;
  /** How long Redis has not answered the probe (a hung or dead Redis), 0 while it does. */
  redisFailingMs(): number;
  /**
   * How long the oldest failing settlement has been failing, 0 while the outbox drains: of those
   * to `accountId`'s shard (a Redis Cluster primary; one Redis is one shard), or of any.
   */
  settlementsFailingMs(accountId?: string): number;
  /** Whether settlements to every shard have failed longer than `stallMs` (all Redis, not one shard). */
  settlementsStalledEverywhere(): boolean;
  /** Shards (primaries) left with fewer replicas than REDIS_WAIT_REPLICAS, and what they hold back. */
  shardsWithoutReplicas(): { shard: string; since: number; held: number }[];
  /** Why the settlement journal cannot be written (a full disk), since when; null while it writes. */
  journalWriteFailure(): { since: number; error: Error } | null;
  /** Settlements owed to Redis, kept in the journal. */
  owedSettlements(): number;
  /** PROXY_OUTBOX_STALL_MS: how long settlements (or Redis) may fail before billable calls stop. */
  stallMs: number;
}

export interface Fault {
  /** The fault's name, CamelCase (a Kubernetes condition's type). */
  type: string;
  /** Whether it lasts now for the whole replica (it turns its check false). */
  holds(s: FaultSources): boolean;
  /**
   * A fault of one Redis Cluster shard: whether it lasts for `accountId`'s calls (the refusal is
   * theirs alone), and whether it lasts for any shard (said in /readyz's reasons and its gauge,
   * the replica staying ready for the others). Without it, `holds` decides for every account.
   */
  shard?: { holdsFor(s: FaultSources, accountId: string): boolean; anywhere(s: FaultSources): boolean };
  /** While it holds: what is wrong and what to do, for /readyz's `reasons`. */
  message(s: FaultSources): string;
  /** The /readyz check it turns false; several faults may share one. */
  check: string;
  /**
   * What is refused while it holds: billable calls, or every /v1 call (nothing could be served), or
   * nothing (a degraded state the operator must hear of).
   */
  refuses: 'billable calls' | 'every call' | 'nothing';
  refusal: () => ApiError;
  /** Its gauge: 0 while all is well (its name and meaning are what alerts and dashboards read). */
  metric: { name: string; help: string; value(s: FaultSources): number };
  /** Its row of the faults runbook, by section title. */
  runbook: string;
}

/** Since `failure`, in seconds (0 while none): the gauges say how long a fault has lasted. */
const secondsSince = (failure: { since: number } | null) =>
  failure === null ? 0 : (Date.now() - failure.since) / 1000;

export const FAULTS: readonly Fault[] = [
  {
    type: 'RedisDataLost',
    holds: (s) => s.redisMismatch() !== null,
    message: (s) => {
      const m = s.redisMismatch()!;
      return `Redis lost its data or is another server: its epoch is ${m.found ?? 'missing'}, this replica knew ${m.expected}; ${s.owedSettlements()} settlements stay in the journal until Redis is restored from its AOF/RDB`;
    },
    check: 'redisData',
    // A Redis that lost its data has no keys: every call would be a 401 (issue 22). Say what is wrong.
    refuses: 'every call',
    refusal: storeLostData,
    metric: {
      name: 'mp_proxy_redis_data_lost',
      help: 'Redis is not the one this replica knew (its mp:epoch is missing or another: it lost its data); nothing is served and owed settlements stay in the journal (1), or it is (0)',
      value: (s) => (s.redisMismatch() === null ? 0 : 1),
    },
    runbook: 'docs/faults.md "Redis lost its data"',
  },
  {
    type: 'RedisUnanswered',
    holds: (s) => s.redisFailingMs() > s.stallMs,
    message: (s) => `Redis has not answered for ${s.redisFailingMs()} ms`,
    check: 'billing',
    refuses: 'billable calls',
    refusal: billingUnavailable,
    metric: {
      name: 'mp_proxy_redis_unanswered_seconds',
      help: `How long Redis has not answered this replica's PINGs within REDIS_COMMAND_TIMEOUT_MS (hung or down); past PROXY_OUTBOX_STALL_MS billable calls are refused (0: it answers)`,
      value: (s) => s.redisFailingMs() / 1000,
    },
    runbook: 'docs/faults.md "Redis hangs"',
  },
  {
    type: 'SettlementsStalled',
    // A stall that Redis's silence already explains is said once, as RedisUnanswered. On a Redis
    // Cluster, one shard's stall (its primary failing over) refuses that shard's accounts only; the
    // replica turns unready only when every shard stalls (issue 38).
    holds: (s) => s.settlementsStalledEverywhere() && s.redisFailingMs() <= s.stallMs,
    shard: {
      holdsFor: (s, accountId) =>
        s.settlementsFailingMs(accountId) > s.stallMs && s.redisFailingMs() <= s.stallMs,
      anywhere: (s) => s.settlementsFailingMs() > s.stallMs && s.redisFailingMs() <= s.stallMs,
    },
    message: (s) => `settlements have not reached Redis for ${s.settlementsFailingMs()} ms`,
    check: 'billing',
    refuses: 'billable calls',
    refusal: billingUnavailable,
    metric: {
      name: 'mp_proxy_outbox_stalled_seconds',
      help: 'How long the oldest failing settlement has been failing (0: the outbox drains)',
      value: (s) => s.settlementsFailingMs() / 1000,
    },
    runbook: 'docs/faults.md "Settlements do not reach Redis"',
  },
  {
    type: 'RedisShardWithoutReplicas',
    // REDIS_WAIT_REPLICAS cannot be met on a primary a failover just promoted: billing goes on, its
    // settlements held in the journal until a replica is back (proxy/billing/replica-wait.ts).
    holds: () => false,
    shard: { holdsFor: () => false, anywhere: (s) => s.shardsWithoutReplicas().length > 0 },
    message: (s) =>
      `Redis primaries without the replicas REDIS_WAIT_REPLICAS asks for (degraded, still billing): ${s
        .shardsWithoutReplicas()
        .map((x) => `${x.shard} for ${Date.now() - x.since} ms, ${x.held} settlements kept in the journal`)
        .join('; ')}`,
    check: 'billing',
    refuses: 'nothing',
    refusal: billingUnavailable,
    metric: {
      name: 'mp_proxy_redis_shards_without_replicas',
      help: 'Redis primaries this replica settles on that have fewer replicas than REDIS_WAIT_REPLICAS (a failover promoted a replica and the old primary is not back): billing goes on, their settlements kept in the journal until a replica has them (0: none)',
      value: (s) => s.shardsWithoutReplicas().length,
    },
    runbook: 'docs/faults.md "A Redis primary without replicas"',
  },
  {
    type: 'JournalNotWritable',
    holds: (s) => s.journalWriteFailure() !== null,
    message: (s) =>
      `the settlement journal cannot be written (${s.journalWriteFailure()!.error.message}): free space in PROXY_DATA_DIR`,
    check: 'journal',
    // A settlement that cannot be made crash-safe is not taken on.
    refuses: 'billable calls',
    refusal: billingUnavailable,
    metric: {
      name: 'mp_proxy_journal_write_failing_seconds',
      help: 'How long the settlement journal has failed to write (a full PROXY_DATA_DIR); billable calls are refused meanwhile (0: it writes)',
      value: (s) => secondsSince(s.journalWriteFailure()),
    },
    runbook: `docs/faults.md "The journal's disk is full"`,
  },
];
