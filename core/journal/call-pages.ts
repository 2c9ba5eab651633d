// Inference API Usage call by call, a page at a time (issue 23 item 5): an account's charges and
// refunds, newest first, from the journal and the usage stream's entries not yet archived (the
// archiver runs every second, but a page must not miss the call just made). A page ends at a
// cursor — the last entry's (time, transfer id) — and the next page starts strictly after it, so
// paging is stable while new calls arrive and while the archiver moves entries across.

import type { Redis } from '../redis/client.ts';
import { accountKeys } from '../redis/keyspace.ts';
import { parseEntry, type UsageEntry } from '../usage/usage.ts';
import { entryOfRecord } from './entry-of-record.ts';
import { type Journal, MONTHS_3_4 } from './journal.ts';

/** Stream ids are Redis's clock, entries are filed by the writer's: read the stream this much wider. */
const CLOCK_SLACK_MS = 10 * 60_000;
/** Stream entries read per XREVRANGE. */
const STREAM_PAGE = 500;

export interface CallPageQuery {
  accountId: string;
  keyId?: string;
  fromMs: number;
  /** Exclusive. */
  toMs: number;
  limit: number;
  /** From a previous page's `next`: only entries after it (older, or as old with a smaller id). */
  cursor?: CallCursor;
}

export interface CallCursor {
  atMs: number;
  id: string;
}

/** A cursor as the URL carries it: `<ms>.<transfer id>` in base64url (ids hold ':'). */
export function encodeCursor(c: CallCursor): string {
  return Buffer.from(`${c.atMs}.${c.id}`).toString('base64url');
}

/** The cursor a client sent back, or null when it is not one of ours. */
export function decodeCursor(s: string): CallCursor | null {
  const text = Buffer.from(s, 'base64url').toString('utf8');
  const m = /^(\d{1,15})\.(\S{1,200})$/.exec(text);
  return m ? { atMs: Number(m[1]), id: m[2]! } : null;
}

/** Newest first: by time, then transfer id, both descending (the cursor's order). */
const newestFirst = (a: UsageEntry, b: UsageEntry) =>
  b.atMs - a.atMs || (a.opId < b.opId ? 1 : a.opId > b.opId ? -1 : 0);

const beforeCursor = (e: UsageEntry, c: CallCursor | undefined) =>
  c === undefined || e.atMs < c.atMs || (e.atMs === c.atMs && e.opId < c.id);

/**
 * The stream's charges and refunds in the page's range and after its cursor, newest (by id) first,
 * read a page of ids at a time until the next entries are too old to be among the `limit + 1`
 * newest: ids are Redis's clock and `atMs` the writer's, equal within CLOCK_SLACK_MS.
 */
async function newestStreamEntries(
  redis: Redis,
  q: CallPageQuery,
  toMs: number,
  keep: (e: UsageEntry) => boolean,
): Promise<UsageEntry[]> {
  const stream = accountKeys(q.accountId).usage;
  const floor = String(Math.max(0, q.fromMs - CLOCK_SLACK_MS));
  let end = String(toMs + CLOCK_SLACK_MS);
  const found: UsageEntry[] = [];
  for (;;) {
    const page = await redis.xrevrange(stream, end, floor, 'COUNT', STREAM_PAGE);
    for (const [id, fields] of page) {
      const e = parseEntry(id, fields);
      if (
        (e.type === 'charge' || e.type === 'refund') &&
        e.atMs >= q.fromMs &&
        e.atMs < toMs &&
        (q.keyId === undefined || e.keyId === q.keyId) &&
        beforeCursor(e, q.cursor) &&
        keep(e)
      )
        found.push(e);
    }
    if (page.length < STREAM_PAGE) return found;
    const lastId = page[page.length - 1]![0];
    if (found.length > q.limit) {
      // The (limit + 1)-th newest found: an entry filed before it, by more than the slack, cannot
      // be on the page.
      const bar = found.map((e) => e.atMs).sort((a, b) => b - a)[q.limit]!;
      if (Number(lastId.split('-')[0]) < bar - CLOCK_SLACK_MS) return found;
    }
    end = `(${lastId}`;
  }
}

export async function callPage(
  redis: Redis,
  journal: Journal,
  q: CallPageQuery,
): Promise<{ entries: UsageEntry[]; next: string | null }> {
  const toMs = q.cursor ? Math.min(q.toMs, q.cursor.atMs + 1) : q.toMs;
  // One more than the page, so whether there is a next page is known without another query. Ids
  // compare bytewise ("C"), as JavaScript compares the stream's: a locale collation would not.
  const ids = await journal.pool.query<{ id: string }>(
    `select id from transfers where account_id = $1 and kind in ('charge', 'refund')
       and ($2::text is null or key_id = $2) and at_ms >= $3 and at_ms < $4 ${MONTHS_3_4}
       and ($5::bigint is null or (at_ms, id collate "C") < ($5, $6::text collate "C"))
     order by at_ms desc, id collate "C" desc limit $7`,
    [q.accountId, q.keyId ?? null, q.fromMs, toMs, q.cursor?.atMs ?? null, q.cursor?.id ?? null, q.limit + 1],
  );
  const out = (
    await journal.records(
      q.accountId,
      ids.rows.map((r) => r.id),
    )
  ).map(entryOfRecord);
  // With the journal the archiver trims each stream to what it has not archived: this read is short
  // — and it stops once older entries cannot make the page, even when the archiver is far behind.
  const have = new Set(out.map((e) => e.opId));
  const streamed = await newestStreamEntries(redis, q, toMs, (e) => !have.has(e.opId));
  // Entries archived between the two reads are in both; the journal's copy is kept.
  const archivedNow = await journal.present(
    q.accountId,
    streamed.map((e) => e.opId),
  );
  out.push(...streamed.filter((e) => !archivedNow.has(e.opId)));
  out.sort(newestFirst);
  const page = out.slice(0, q.limit);
  const last = page[page.length - 1];
  return {
    entries: page,
    next: out.length > q.limit && last ? encodeCursor({ atMs: last.atMs, id: last.opId }) : null,
  };
}
