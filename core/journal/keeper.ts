// Runs the archiver and the top-up reconciler on one replica of the fleet at a time (a RedisLock,
// as the hold sweeper), off the request path: every JOURNAL_ARCHIVE_INTERVAL_MS the archiver
// passes over the streams, and every JOURNAL_RECONCILE_INTERVAL_MS the reconciler re-applies lost
// top-ups, and makes the journal's partitions for the months ahead. What it did is kept in `status` for the metrics.
// A hung database (issue 40): every wait on it is bounded (pool.ts), so a tick ends; a tick that
// runs past `stallMs` is said (onStall) while it still runs; the lag is measured from the oldest
// entry read and not yet archived, not from the last pass that finished; leadership is reported
// only while the lock is surely held (renewed less than its ttl ago), so two replicas never both
// say they lead; a replica that lost the lock forgets what it had left unarchived (the leader reads
// it again and says the lag); and stop() waits for a hung tick only so long.

import { Metering } from '../billing/index.ts';
import type { Redis } from '../redis/client.ts';
import { globalKeys } from '../redis/keyspace.ts';
import { RedisLock } from '../redis/lock.ts';
import { Archiver } from './archiver.ts';
import type { Journal } from './journal.ts';
import { type Restored, reconcileTopUps } from './reconciler.ts';

export interface KeeperStatus {
  /** Holds the lock now: it was acquired or renewed less than its ttl ago. */
  readonly leader: boolean;
  /** When the last archive pass finished (ms), or null before the first. */
  lastPassAtMs: number | null;
  /**
   * The oldest entry not yet archived (stream ms): left unread by the last pass, or read by a pass
   * the database has not answered (or that failed); null when everything read is archived.
   */
  readonly behindSinceMs: number | null;
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
  /** A tick has been running this long: the database (or Redis) is not answering. Default 5 s. */
  stallMs?: number;
  /** Said once per stalled tick, while it still runs. */
  onStall?: (s: { forMs: number; behindSinceMs: number | null }) => void;
  /** The stalled tick ended (it finished or gave up), after `forMs`. */
  onStallEnd?: (s: { forMs: number }) => void;
  /** How long stop() waits for a tick under way (a hung database). Default 2 s. */
  stopWaitMs?: number;
}

export interface JournalKeeper {
  status: KeeperStatus;
  stop(): Promise<void>;
}

export function startJournalKeeper(redis: Redis, journal: Journal, opts: KeeperOptions): JournalKeeper {
  const lock = new RedisLock(redis, globalKeys.journalLock, opts.lockTtlMs);
  const archiver = new Archiver(redis, journal);
  const metering = new Metering(redis);
  // Until when this replica surely holds the lock: its ttl counted from before the request that
  // took or renewed it, so it runs out no later than the lock itself in Redis.
  let leaderUntil = 0;
  let unreadSinceMs: number | null = null;
  const status: KeeperStatus = {
    get leader() {
      return Date.now() < leaderUntil;
    },
    lastPassAtMs: null,
    get behindSinceMs() {
      const read = archiver.oldestUnarchivedMs();
      if (read === null) return unreadSinceMs;
      return Math.min(read, unreadSinceMs ?? read);
    },
    archivedTotal: 0,
    restoredTotal: 0,
  };
  const lead = async (): Promise<boolean> => {
    const asked = Date.now();
    const held = await lock.acquireOrRenew();
    leaderUntil = held ? asked + opts.lockTtlMs : 0;
    if (!held) {
      // The lag is the leader's to say. What this replica read and could not archive while it led
      // is pending in Redis, read again by whoever leads now: kept here, a follower's lag would
      // grow for ever with everything archived (issue 47 item 2).
      unreadSinceMs = null;
      archiver.forgetFailed();
    }
    return held;
  };
  let busySince: number | null = null;
  let stalled = false;
  let lastReconcile = 0;
  let stopped = false;
  const tick = async () => {
    if (busySince !== null || stopped) return;
    busySince = Date.now();
    try {
      if (!(await lead())) return;
      // Streams read to their end in one go, pass after pass, while a backlog lasts.
      for (let i = 0; i < 100 && !stopped; i++) {
        const p = await archiver.pass();
        status.archivedTotal += p.archived;
        unreadSinceMs = p.behindSinceMs;
        status.lastPassAtMs = Date.now();
        if (p.behindSinceMs === null) break;
        // Still the leader? (A pass can take long under a backlog; the lock is renewed each time.
        // Two leaders at once would only archive the same entries twice, which inserts nothing.)
        if (!(await lead())) break;
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
      if (stalled) opts.onStallEnd?.({ forMs: Date.now() - (busySince ?? Date.now()) });
      stalled = false;
      busySince = null;
    }
  };
  const stallMs = opts.stallMs ?? 5_000;
  const timer = setInterval(() => {
    if (busySince !== null && !stalled && Date.now() - busySince >= stallMs) {
      stalled = true;
      opts.onStall?.({ forMs: Date.now() - busySince, behindSinceMs: status.behindSinceMs });
    }
    void tick();
  }, opts.archiveIntervalMs);
  timer.unref();
  void tick();
  return {
    status,
    async stop() {
      stopped = true;
      clearInterval(timer);
      // A tick waiting on a hung database ends by its timeouts; a shutdown does not wait for that.
      const deadline = Date.now() + (opts.stopWaitMs ?? 2_000);
      while (busySince !== null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      if (status.leader) await lock.release().catch(() => {});
      leaderUntil = 0;
    },
  };
}
