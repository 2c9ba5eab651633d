// The journal's connection pool (core/journal/journal.ts): every wait on PostgreSQL bounded.
import pg from 'pg';

/** How long any wait on the database may last by default: a connection, a query, a statement. */
export const JOURNAL_DB_TIMEOUT_MS = 5_000;
/** Migrations may rewrite large tables, and wait for another replica migrating: their own bound. */
export const MIGRATION_TIMEOUT_MS = 15 * 60_000;

/**
 * Every wait on the database is bounded (issue 40): a frozen server (SIGSTOP, a partition that
 * resets nothing) answers nothing and the kernel keeps the sockets open, so without these a query
 * waits forever — the keeper's tick, and with it a shutdown. The connect timeout covers a server
 * that accepts and never greets; the client-side query timeout a server that stops mid-query (it
 * fails the query, and the connection is then thrown away); the server-side statement timeout a
 * server that is alive but stuck (a lock), which it cancels itself; an open transaction whose
 * client vanished is ended by the server.
 */
export function boundedPool(
  url: string,
  max: number,
  timeoutMs: number,
  queryTimeoutMs = timeoutMs,
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: queryTimeoutMs,
    statement_timeout: queryTimeoutMs,
    idle_in_transaction_session_timeout: Math.max(queryTimeoutMs, 10_000),
    keepAlive: true,
  });
  // A connection that breaks while idle must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  return pool;
}

/**
 * Ends the pool. A query still waiting on a hung database holds its connection until its timeout:
 * the end is waited for at most `waitMs`, so a shutdown is not held by the database.
 */
export async function endPool(pool: pg.Pool, waitMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    pool.end().catch(() => {}),
    new Promise<void>((r) => {
      timer = setTimeout(r, waitMs);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}
