// How a transfer is written to the journal: its row (one column per usage field, and its month),
// and the inserts that make writing it twice a no-op — across months too (002 migration). The
// queries that read transfers back are in journal.ts.
import type pg from 'pg';
import type { UsageEntry } from '../usage/usage.ts';

export const COLUMNS = [
  ['account_id', 'text'],
  ['id', 'text'],
  ['kind', 'text'],
  ['stream_ms', 'bigint'],
  ['stream_seq', 'bigint'],
  ['at_ms', 'bigint'],
  ['amount', 'bigint'],
  ['cost', 'bigint'],
  ['short', 'bigint'],
  ['held', 'bigint'],
  ['source', 'text'],
  ['reason', 'text'],
  ['lease_id', 'text'],
  ['refund_of', 'text'],
  ['balance_after', 'bigint'],
  ['key_id', 'text'],
  ['model', 'text'],
  ['call_kind', 'text'],
  ['input_tokens', 'bigint'],
  ['cached_tokens', 'bigint'],
  ['output_tokens', 'bigint'],
  ['images', 'bigint'],
  ['video_ms', 'bigint'],
  ['request_id', 'text'],
  ['note', 'text'],
  // The partition's month (002 migration), from at_ms; the table checks it matches.
  ['month', 'int'],
] as const;

/** Months since 1970-01 (UTC) of a time: the journal's partition column (SQL: journal_month). */
export function monthOf(atMs: number): number {
  const d = new Date(atMs);
  return (d.getUTCFullYear() - 1970) * 12 + d.getUTCMonth();
}

export const COLUMN_LIST = COLUMNS.map(([name]) => name).join(', ');
export const COLUMN_TYPES = COLUMNS.map(([name, type]) => `${name} ${type}`).join(', ');

export function rowOf(accountId: string, e: UsageEntry): Row {
  const [ms, seq] = e.id.split('-');
  return {
    account_id: accountId,
    id: e.opId,
    kind: e.type,
    stream_ms: Number(ms),
    stream_seq: Number(seq),
    at_ms: e.atMs,
    amount: e.amount,
    cost: e.cost,
    short: e.short,
    held: e.held,
    source: e.source,
    reason: e.reason,
    lease_id: e.leaseId,
    refund_of: e.refundOf,
    balance_after: e.balance,
    key_id: e.keyId,
    model: e.model,
    call_kind: e.kind,
    input_tokens: e.inputTokens,
    cached_tokens: e.cachedTokens,
    output_tokens: e.outputTokens,
    images: e.images,
    // The stream carries video seconds (vsec); kept in ms like the rollups, an integer.
    video_ms: e.videoSeconds === null ? null : Math.round(e.videoSeconds * 1000),
    request_id: e.requestId,
    note: e.note,
    month: monthOf(e.atMs),
  };
}

export type Row = Record<string, string | number | null>;
/** Any constant of our own: the advisory lock under which partitions are created. */
export const PARTITION_LOCK = 2_300_024;
export type Querier = Pick<pg.Pool, 'query'>;

/**
 * Top-ups go in under a lock per (account, id) and after a look in every month: the same top-up
 * comes at two times (its commit here, its Redis stream entry; or a retried commit), and may fall
 * in two months (002 migration). Sorted, so two batches never wait on each other in a circle.
 */
export async function lockTopUps(c: Querier, rows: readonly Row[]): Promise<void> {
  await c.query(
    `select pg_advisory_xact_lock(hashtextextended(k, 23)) from unnest($1::text[]) k order by k`,
    [rows.map((x) => `${x.account_id} ${x.id}`)],
  );
}

/**
 * Top-ups no month has yet (run under lockTopUps). `offset 0` keeps the look-up a probe of each
 * month's key per row: as a join, PostgreSQL may read every month whole to hash it.
 */
export async function insertTopUps(c: Querier, rows: readonly Row[]): Promise<number> {
  const r = await c.query(
    `insert into transfers (${COLUMN_LIST})
     select ${COLUMN_LIST} from json_to_recordset($1::json) as x(${COLUMN_TYPES})
     where not exists (select 1 from transfers t where t.account_id = x.account_id and t.id = x.id offset 0)
     on conflict (account_id, id, month) do nothing`,
    [JSON.stringify(rows)],
  );
  return r.rowCount ?? 0;
}

/**
 * How far apart in time two stream entries of one transfer can be filed. A settlement is applied
 * once by Redis for 24 h (Metering's settleDoneTtlMs), a charge or a refund for 35 days (its
 * ledgerDoneTtlMs; a void is given that too); after that Redis itself would apply a resend again.
 * Plus an hour for replicas' clocks. Only a transfer this close to a month's turn can have a copy
 * in another month. (Raising those ttls means raising these.)
 */
export const SETTLE_REPEAT_MS = 25 * 3_600_000;
export const LEDGER_REPEAT_MS = 36 * 24 * 3_600_000;
export const CLOCK_SKEW_MS = 3_600_000;

/**
 * Charges, refunds and voids from the streams (their postings follow from them: the 001
 * migration's view), in one statement. The rows go as one JSON document: far cheaper to send than
 * a parameter array per column. A transfer the journal has is left alone: in its own month the key
 * says so (on conflict); a copy in another month (a resend after a failover, 002 migration) is
 * looked for only where one can be — months within the repeat window above, which for most
 * settlements is their own month alone. That look-up is a probe of those months' keys per row
 * (`offset 0`: not a join, which may hash whole months), and the batch's bounds, as constants,
 * keep PostgreSQL to those months' partitions. Returns how many were new.
 */
export async function insertCalls(c: Querier, rows: readonly Row[]): Promise<number> {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const x of rows) {
    const at = x.at_ms as number;
    const repeat = (x.id as string).startsWith('settle:') ? SETTLE_REPEAT_MS : LEDGER_REPEAT_MS;
    x.lo = monthOf(at - repeat - CLOCK_SKEW_MS);
    x.hi = monthOf(at + CLOCK_SKEW_MS);
    if (x.lo < lo) lo = x.lo;
    if (x.hi > hi) hi = x.hi;
  }
  const r = await c.query(
    `insert into transfers (${COLUMN_LIST})
     select ${COLUMN_LIST} from json_to_recordset($1::json) as x(${COLUMN_TYPES}, lo int, hi int)
     where (x.lo = x.month and x.hi = x.month)
        or not exists (select 1 from transfers t where t.account_id = x.account_id and t.id = x.id
                       and t.month between x.lo and x.hi and t.month <> x.month
                       and t.month between $2::int and $3::int offset 0)
     on conflict (account_id, id, month) do nothing`,
    [JSON.stringify(rows), lo, hi],
  );
  return r.rowCount ?? 0;
}
