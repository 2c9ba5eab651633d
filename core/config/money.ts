// The configuration of the money's keepers: the PostgreSQL journal, and the credit holds with the
// sweeper that voids a dead proxy's: one concern of the settings every service reads (./shared.ts
// spreads it in). Every variable is listed in docs/operations.md "Configuration".
import { z } from 'zod';

export const moneyConfig = z.object({
  /**
   * The durable money journal (PostgreSQL, core/journal). Unset: no journal — Redis alone keeps the
   * money, as before issue 23 (tests that do not need it, installs that have not moved yet).
   */
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  /** How often the journal's archiver passes over the usage streams (the leading proxy only). */
  JOURNAL_ARCHIVE_INTERVAL_MS: z.coerce.number().int().min(10).default(1000),
  /** How often the reconciler re-applies committed top-ups Redis lacks. */
  JOURNAL_RECONCILE_INTERVAL_MS: z.coerce.number().int().min(100).default(10_000),
  /** How far back the reconciler looks: top-ups committed this recently (below the 35-day done ttl). */
  JOURNAL_RECONCILE_WINDOW_MS: z.coerce
    .number()
    .int()
    .min(1000)
    .max(30 * 24 * 3_600_000)
    .default(24 * 3_600_000),
  /** The journal keeper's leader lock ttl: another replica takes over this long after the leader died. */
  JOURNAL_LOCK_MS: z.coerce.number().int().min(500).default(5000),
  /**
   * The longest any wait on the journal's database may last — a connection, a query, a statement
   * (core/journal/pool.ts): a hung database fails the keeper's pass after this, and it is said.
   */
  JOURNAL_DB_TIMEOUT_MS: z.coerce.number().int().min(100).default(5000),
  /**
   * Lifetime of a credit hold or lease in Redis time. Its proxy renews it every third of this while
   * the call runs, so only a hold whose proxy died (or lost Redis for this long) expires and is
   * voided by the sweeper: what a crash can strand, and for about how long.
   */
  HOLD_TTL_MS: z.coerce.number().int().min(300).default(30_000),
  /** How often the fleet's one hold sweeper (leader-elected through a Redis lock) looks at due holds. */
  HOLD_SWEEP_INTERVAL_MS: z.coerce.number().int().min(10).default(1_000),
  /** The sweeper lock's ttl: another replica takes the sweeping over this long after its holder died. */
  HOLD_SWEEPER_LOCK_MS: z.coerce.number().int().min(100).default(5_000),
  /**
   * How often the hold sweeper also re-files every open hold and lease into its expiry index
   * (core/billing/sweeper.ts resyncHoldIndexes); 0: never. An index entry is written to the index's
   * primary before its hold; a Redis Cluster failover can lose that write (replication is
   * asynchronous) while the hold, on another primary, survives — and a hold the index does not
   * name is never voided if its proxy dies before it renews. The pass reads every account's holds.
   */
  HOLD_INDEX_RESYNC_MS: z.coerce.number().int().min(0).default(300_000),
});
