// Runs the archiver and the top-up reconciler on one replica of the fleet at a time (a RedisLock,
// as the hold sweeper), off the request path: every JOURNAL_ARCHIVE_INTERVAL_MS the archiver
// passes over the streams, and every JOURNAL_RECONCILE_INTERVAL_MS the reconciler re-applies lost
// top-ups, and makes the journal's partitions for the months ahead. What it did is kept in `status` for the metrics.

import { Metering } from '../billing/index.ts';
import { globalKeys } from '../keyspace.ts';
import type { Redis } from '../redis-client.ts';
import { RedisLock } from '../redis-lock.ts';
import { Archiver } from './archiver.ts';
import type { Journal } from './journal.ts';
import { type Restored, reconcileTopUps } from './reconciler.ts';

export interface KeeperStatus {
  leader: boolean;
  /** When the last archive pass finished (ms), or null before the first. */
  lastPassAtMs: number | null;
  /** The oldest entry the last pass left unread (ms), null when it read everything. */
  behindSinceMs: number | null;
  archivedTotal: number;
  restoredTotal: number;
}

export interface KeeperOptions {
  archiveIntervalMs: number;
  reconcileIntervalMs: number;
  reconcileWindowMs: number;
  lockTtlMs: number;
  onRestored?: (r: Restored[]) => void;
  /** Partitions of the journal it created (their names). */
  onPartitions?: (names: string[]) => void;
  /** The clock the partitions' months are read from (tests move it). */
  now?: () => number;
  onError?: (err: unknown, what: string) => void;
}

export interface JournalKeeper {
  status: KeeperStatus;
  stop(): Promise<void>;
}

export function startJournalKeeper(redis: Redis, journal: Journal, opts: KeeperOptions): JournalKeeper {
  const lock = new RedisLock(redis, globalKeys.journalLock, opts.lockTtlMs);
  const archiver = new Archiver(redis, journal);
  const metering = new Metering(redis);
  const status: KeeperStatus = {
    leader: false,
    lastPassAtMs: null,
    behindSinceMs: null,
    archivedTotal: 0,
    restoredTotal: 0,
  };
  let busy = false;
  let lastReconcile = 0;
  let stopped = false;
  const tick = async () => {
    if (busy || stopped) return;
    busy = true;
    try {
      status.leader = await lock.acquireOrRenew();
      if (!status.leader) return;
      // Streams read to their end in one go, pass after pass, while a backlog lasts.
      for (let i = 0; i < 100 && !stopped; i++) {
        const p = await archiver.pass();
        status.archivedTotal += p.archived;
        status.behindSinceMs = p.behindSinceMs;
        status.lastPassAtMs = Date.now();
        if (p.behindSinceMs === null) break;
        // Still the leader? (A pass can take long under a backlog; the lock is renewed each time.
        // Two leaders at once would only archive the same entries twice, which inserts nothing.)
        status.leader = await lock.acquireOrRenew();
        if (!status.leader) break;
      }
      if (Date.now() - lastReconcile >= opts.reconcileIntervalMs) {
        lastReconcile = Date.now();
        // Next months' partitions made well before they are needed (a month ahead and more), so
        // no row waits in the default partition at a month's turn (002 migration).
        try {
          const made = await journal.ensurePartitions(opts.now?.());
          if (made.length > 0) opts.onPartitions?.(made);
        } catch (err) {
          opts.onError?.(err, 'partitions');
        }
        try {
          const restored = await reconcileTopUps(
            { redis, journal, metering },
            { windowMs: opts.reconcileWindowMs },
          );
          status.restoredTotal += restored.length;
          if (restored.length > 0) opts.onRestored?.(restored);
        } catch (err) {
          opts.onError?.(err, 'reconcile');
        }
      }
    } catch (err) {
      opts.onError?.(err, 'archive');
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), opts.archiveIntervalMs);
  timer.unref();
  void tick();
  return {
    status,
    async stop() {
      stopped = true;
      clearInterval(timer);
      while (busy) await new Promise((r) => setTimeout(r, 10));
      if (status.leader) await lock.release().catch(() => {});
      status.leader = false;
    },
  };
}
