// What the replica does when its Redis probe (./redis-probe.ts) has news (issue 22): a Redis that
// is not the one it knew is logged and reported in Redis itself for `ledger check` (once a second);
// a Redis back again gets the owed settlements at once and its scripts reloaded; cluster primaries
// the epoch probe cannot see are named. Whether the replica serves meanwhile is the fault table's
// word (proxy/faults/), read from the probe; this is only the acting half.
import type { FastifyBaseLogger } from 'fastify';
import { loadMeteringScripts } from '../../core/billing/scripts.ts';
import type { Redis } from '../../core/redis/client.ts';
import { reportEpochFault } from '../../core/redis/epoch.ts';
import { RedisProbe } from './redis-probe.ts';

export interface RedisWatchOptions {
  /** The request path's connection (the epoch fault report, the scripts). */
  redis: Redis;
  /** The outbox's connection, which the probe reads on. */
  probeRedis: Redis;
  epoch: { expected: string; found: string | null; matches: boolean };
  timeoutMs: number;
  /** This replica's name in reports (./replica-reporter.ts). */
  replica: string;
  /** Settlements the journal owes (said while Redis is another). */
  owed: () => number;
  /** Redis answers again: send what is owed now. */
  onBack: () => void;
  log: FastifyBaseLogger;
}

export function watchRedis(o: RedisWatchOptions): RedisProbe {
  const { epoch, log } = o;
  let reported = 0;
  const probe: RedisProbe = new RedisProbe({
    redis: o.probeRedis,
    epoch: epoch.expected,
    matchedAtStart: epoch.matches,
    foundAtStart: epoch.found,
    intervalMs: 100,
    timeoutMs: o.timeoutMs,
    onMismatch: (found) => {
      // Once a second: the log line, and the report ledger check reads from Redis itself.
      if (Date.now() - reported < 1_000) return;
      reported = Date.now();
      const owed = o.owed();
      log.error(
        { expected: epoch.expected, found, owed },
        'Redis is not the one this replica knew (its epoch is missing or different): it lost its data or is another server. Not serving; owed settlements stay in the journal. Restore Redis from its AOF/RDB (docs/faults.md "Faults").',
      );
      reportEpochFault(
        o.redis,
        {
          replica: o.replica,
          expected: epoch.expected,
          found,
          owed,
          sinceMs: probe.mismatch?.since ?? Date.now(),
        },
        10_000,
      ).catch(() => {});
    },
    onBack: () => {
      log.warn('Redis answers again; sending owed settlements now');
      o.onBack();
      loadMeteringScripts(o.redis).catch(() => {}); // a restarted Redis lost them
    },
    onUncovered: (primaries) => {
      if (primaries.length > 0)
        log.warn(
          { primaries },
          'these Redis Cluster primaries hold no epoch key (each serves fewer than 256 contiguous slots): their losing their data would go unseen by the epoch probe (docs/redis-cluster.md "Running on Redis Cluster")',
        );
      else log.info('every Redis Cluster primary holds an epoch key again');
    },
  });
  return probe;
}
