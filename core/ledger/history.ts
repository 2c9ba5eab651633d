// An account's money history when the archiver trims the streams: the journal holds what was
// archived (forever), Redis the entries not yet archived. Both are read and joined by transfer id,
// each entry once, so a reader sees the same entries whether or not the archiver has run.

import { entryOfRecord } from '../journal/entry-of-record.ts';
import type { Journal } from '../journal/journal.ts';
import type { Redis } from '../redis/client.ts';
import { ledgerEntries, type UsageEntry } from '../usage/usage.ts';
import { ledgerOfRequest } from './ledger.ts';

/**
 * The entries of an account filed (by `ts`) in [fromMs, toMs), oldest first: the journal's and
 * the stream's not yet archived. `slackMs` widens the stream's id range (ids are Redis's clock).
 */
export async function historyEntries(
  redis: Redis,
  journal: Journal,
  q: { accountId: string; fromMs: number; toMs: number; slackMs: number },
): Promise<UsageEntry[]> {
  const r = await journal.pool.query<{ id: string }>(
    // The month bounds let PostgreSQL read only those months' partitions.
    `select id from transfers where account_id = $1 and at_ms >= $2 and at_ms < $3
       and month between journal_month($2::bigint) and journal_month($3::bigint)`,
    [q.accountId, q.fromMs, q.toMs],
  );
  const out = (
    await journal.records(
      q.accountId,
      r.rows.map((x) => x.id),
    )
  ).map(entryOfRecord);
  const have = new Set(out.map((e) => e.opId));
  const streamed: UsageEntry[] = [];
  for await (const e of ledgerEntries(redis, q.accountId, {
    start: String(Math.max(0, q.fromMs - q.slackMs)),
    end: String(q.toMs + q.slackMs),
  })) {
    if (e.atMs >= q.fromMs && e.atMs < q.toMs && !have.has(e.opId)) streamed.push(e);
  }
  // Entries archived meanwhile are in both reads; the journal's copy is kept.
  const archivedNow = await journal.present(
    q.accountId,
    streamed.map((e) => e.opId),
  );
  out.push(...streamed.filter((e) => !archivedNow.has(e.opId)));
  return out.sort((a, b) => a.atMs - b.atMs || a.id.localeCompare(b.id));
}

/**
 * One call's entries (`modelplane ledger show`): its charge, a void of its hold, refunds of its
 * charge — from the journal, and from the streams of the accounts it names for what is not yet
 * archived. Without a journal entry, every account's stream is searched, as without a journal.
 */
export async function requestHistory(
  redis: Redis,
  journal: Journal,
  requestId: string,
  accountId?: string,
): Promise<{ accountId: string; entries: UsageEntry[] }[]> {
  const records = await journal.ofRequest(requestId, accountId);
  const accounts = [...new Set(records.map((r) => r.accountId))];
  if (accounts.length === 0) return ledgerOfRequest(redis, requestId, accountId);
  const out: { accountId: string; entries: UsageEntry[] }[] = [];
  for (const a of accounts) {
    const entries = records.filter((r) => r.accountId === a).map(entryOfRecord);
    const have = new Set(entries.map((e) => e.opId));
    for (const f of await ledgerOfRequest(redis, requestId, a))
      for (const e of f.entries) if (!have.has(e.opId)) entries.push(e);
    out.push({ accountId: a, entries: entries.sort((x, y) => x.atMs - y.atMs || x.id.localeCompare(y.id)) });
  }
  return out;
}
