// The billing page's ledger (issue "Console" item 5): over a time range, the top-ups, the API's
// charges grouped by day and model, the refunds of API calls, and the service ledger's charges
// and refunds listed one by one.
//
// Read from the usage stream, the audit trail, not the rollups: top-ups and individual refunds
// are only in the stream, so the page must read the stream's range anyway, and one pass gives
// every list from the one source `modelplane ledger check` proves — what the page shows adds up
// to the balance's change to the nano. The stream's ids are Redis timestamps, so the range is an
// XRANGE over it, not a scan of the whole stream; the cost is the number of entries in the range
// (an entry per API call). Rollups would make the charges O(hours), but not the rest.

import type { Journal } from '../journal/journal.ts';
import type { Redis } from '../redis/client.ts';
import { accountKeys } from '../redis/keyspace.ts';
import { ledgerEntries, type UsageEntry } from '../usage/usage.ts';
import { historyEntries } from './history.ts';

/**
 * Entries are filed by the clock of the process that wrote them (`ts`); the stream id is Redis's
 * clock. The range is read this much wider by id, then cut by `ts`, so clock skew loses nothing.
 */
const CLOCK_SLACK_MS = 10 * 60_000;

export type TopUpSource = 'stripe' | 'approval' | 'operator';

export interface LedgerView {
  /** Oldest first; `source` is the top-up request's provider, `operator` for credits granted with the CLI. */
  topUps: { id: string; atMs: number; amount: number; note: string | null; source: TopUpSource }[];
  /** By UTC day, then model; `amount` is what was charged (refunds are listed apart). */
  charges: { day: string; model: string; requests: number; amount: number }[];
  /** Refunds of API calls; `of` is the refunded call's request id or video job id. */
  refunds: { id: string; atMs: number; amount: number; of: string; model: string | null }[];
  /** The service ledger API's charges and refunds (the operator's other products). */
  service: {
    id: string;
    atMs: number;
    type: 'charge' | 'refund';
    amount: number;
    product: string;
    description: string;
  }[];
}

const afterColon = (opId: string) => opId.slice(opId.indexOf(':') + 1);

/**
 * With the durable journal (DATABASE_URL) the archiver trims the streams, so the range is read from
 * the journal and the entries not yet archived (core/ledger/history.ts).
 */
export async function ledgerView(
  redis: Redis,
  q: { accountId: string; fromMs: number; toMs: number },
  journal?: Journal,
): Promise<LedgerView> {
  const view: LedgerView = { topUps: [], charges: [], refunds: [], service: [] };
  const charges = new Map<string, LedgerView['charges'][number]>();
  const range = {
    start: String(Math.max(0, q.fromMs - CLOCK_SLACK_MS)),
    end: String(q.toMs + CLOCK_SLACK_MS),
  };
  const entries: AsyncIterable<UsageEntry> | Iterable<UsageEntry> = journal
    ? await historyEntries(redis, journal, { ...q, slackMs: CLOCK_SLACK_MS })
    : ledgerEntries(redis, q.accountId, range);
  for await (const e of entries) {
    if (e.atMs < q.fromMs || e.atMs >= q.toMs) continue;
    if (e.kind === 'service' && (e.type === 'charge' || e.type === 'refund')) {
      // The caller's id rides in the entry's request-id field.
      view.service.push({
        id: e.requestId ?? afterColon(e.opId),
        atMs: e.atMs,
        type: e.type,
        amount: e.amount,
        product: e.model ?? '',
        description: '',
      });
    } else if (e.type === 'topup') {
      view.topUps.push({
        id: afterColon(e.opId),
        atMs: e.atMs,
        amount: e.amount,
        note: e.note,
        source: 'operator',
      });
    } else if (e.type === 'refund') {
      view.refunds.push({
        id: afterColon(e.opId),
        atMs: e.atMs,
        amount: e.amount,
        of: afterColon(e.refundOf ?? ''),
        model: e.model,
      });
    } else if (e.type === 'charge') {
      const day = new Date(e.atMs).toISOString().slice(0, 10);
      const model = e.model ?? '';
      const key = `${day}|${model}`;
      const row = charges.get(key) ?? { day, model, requests: 0, amount: 0 };
      row.requests += 1;
      row.amount += e.amount;
      charges.set(key, row);
    }
  }
  view.charges = [...charges.values()].sort(
    (a, b) => a.day.localeCompare(b.day) || a.model.localeCompare(b.model),
  );
  await describe(redis, q.accountId, view);
  return view;
}

/** What only the records hold: a top-up's provider, a service entry's description. */
async function describe(redis: Redis, accountId: string, view: LedgerView): Promise<void> {
  if (view.topUps.length === 0 && view.service.length === 0) return;
  const k = accountKeys(accountId);
  const pipe = redis.pipeline();
  for (const t of view.topUps) pipe.hget(k.topUp(t.id), 'provider');
  for (const s of view.service)
    pipe.hget(s.type === 'charge' ? k.serviceCharge(s.id) : k.serviceRefund(s.id), 'description');
  const res = (await pipe.exec()) ?? [];
  const values = res.map(([err, v]) => {
    if (err) throw err;
    return v as string | null;
  });
  view.topUps.forEach((t, i) => {
    const provider = values[i];
    if (provider === 'stripe' || provider === 'approval') t.source = provider;
  });
  view.service.forEach((s, i) => {
    s.description = values[view.topUps.length + i] ?? '';
  });
}
