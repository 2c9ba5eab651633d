// Reading usage back: hourly rollups for reports, the usage stream for records and for the audit
// that recomputes a balance. The writers are the metering scripts (core/billing/lua).

import type { UsageRecord } from '../billing/script-args.ts';
import type { Redis } from '../redis/client.ts';
import { accountKeys } from '../redis/keyspace.ts';

const HOUR_MS = 3_600_000;
const PAGE = 1000;

/** What the rollups count of calls, whatever they are grouped by. */
export interface UsageCounts {
  requests: number;
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
  images: number;
  videoSeconds: number;
}

export const USAGE_COUNTS = [
  'requests',
  'inputTokens',
  'cachedTokens',
  'outputTokens',
  'images',
  'videoSeconds',
] as const satisfies readonly (keyof UsageCounts)[];

/** Every count at zero: a row before anything is added to it. */
export function zeroCounts(): UsageCounts {
  return { requests: 0, inputTokens: 0, cachedTokens: 0, outputTokens: 0, images: 0, videoSeconds: 0 };
}

/** One hour × key × model of the hourly rollups. Costs are nano-units, net of refunds. */
export interface UsageRow extends UsageCounts {
  /** Start of the hour, ISO 8601 UTC. */
  hour: string;
  hourStartMs: number;
  keyId: string | null;
  model: string;
  /** Charged minus refunded in this hour. */
  cost: number;
  refunded: number;
}

/** One audit entry of the usage stream (the ledger). */
export interface UsageEntry {
  /** Stream entry id. */
  id: string;
  atMs: number;
  /** A void moves no money: it records a hold or lease given back because its owner stopped renewing it. */
  type: 'charge' | 'refund' | 'topup' | 'void';
  /** `settle:<holdId>`, `charge:<chargeId>`, `refund:<refundId>`, `topup:<topUpId>` or `void:<holdId>`. */
  opId: string;
  /** Positive nano-units: charged, refunded, topped up, or (void) the hold given back. */
  amount: number;
  /** The call's true cost (charges only; `amount` is less when `short` is not 0). */
  cost: number | null;
  /** Cost that could not be collected: the hold was short or voided and the balance ran out. */
  short: number;
  /** What was held for the call (charges of calls). */
  held: number | null;
  /** Where the hold was: `hold` (reserved), `lease` (carved from a lease), `none` (voided before the settle). */
  source: string | null;
  /** Voids: why (`hold_expired`, `lease_expired`). */
  reason: string | null;
  /** Voids of a lease: its id. */
  leaseId: string | null;
  /** Refunds: the op id of the charge refunded. */
  refundOf: string | null;
  /** Balance right after this entry. */
  balance: number;
  keyId: string | null;
  model: string | null;
  kind: UsageRecord['kind'] | null;
  inputTokens: number | null;
  cachedTokens: number | null;
  outputTokens: number | null;
  images: number | null;
  videoSeconds: number | null;
  requestId: string | null;
  note: string | null;
}

const metricOf: Record<string, keyof UsageRow> = {
  req: 'requests',
  in: 'inputTokens',
  cached: 'cachedTokens',
  out: 'outputTokens',
  img: 'images',
  vms: 'videoSeconds',
  cost: 'cost',
  refund: 'refunded',
};

/** Rows for the hours that overlap [fromMs, toMs), sorted by hour, key, model. */
export async function usageReport(
  redis: Redis,
  q: { accountId: string; keyId?: string; fromMs: number; toMs: number },
): Promise<UsageRow[]> {
  const k = accountKeys(q.accountId);
  const firstHour = q.fromMs - (q.fromMs % HOUR_MS);
  const hours = await redis.zrangebyscore(k.rollupHours, firstHour, `(${q.toMs}`);
  const rows: UsageRow[] = [];
  for (const hour of hours) {
    const hourStartMs = Number(hour);
    const byKeyModel = new Map<string, UsageRow>();
    for (const [field, value] of Object.entries(await redis.hgetall(k.rollup(hour)))) {
      // `<keyId>|<model>|<metric>`; a model id may itself hold '|', a key id never does.
      const first = field.indexOf('|');
      const last = field.lastIndexOf('|');
      const keyId = field.slice(0, first) || null;
      const model = field.slice(first + 1, last);
      const metric = metricOf[field.slice(last + 1)];
      if (metric === undefined || (q.keyId !== undefined && keyId !== q.keyId)) continue;
      const id = `${keyId ?? ''}|${model}`;
      let row = byKeyModel.get(id);
      if (!row) {
        row = emptyRow(hourStartMs, keyId, model);
        byKeyModel.set(id, row);
      }
      (row[metric] as number) += Number(value);
    }
    for (const row of byKeyModel.values()) {
      row.videoSeconds /= 1000; // stored in ms so that rollups stay integers
      rows.push(row);
    }
  }
  return rows.sort(
    (a, b) =>
      a.hourStartMs - b.hourStartMs ||
      (a.keyId ?? '').localeCompare(b.keyId ?? '') ||
      a.model.localeCompare(b.model),
  );
}

/** The newest `count` entries (default 100), optionally only those of one key. Newest first. */
export async function usageRecords(
  redis: Redis,
  accountId: string,
  opts: { count?: number; keyId?: string } = {},
): Promise<UsageEntry[]> {
  const want = opts.count ?? 100;
  const stream = accountKeys(accountId).usage;
  const out: UsageEntry[] = [];
  let end = '+';
  while (out.length < want) {
    const page = await redis.xrevrange(stream, end, '-', 'COUNT', PAGE);
    for (const [id, fields] of page) {
      const entry = parseEntry(id, fields);
      if (opts.keyId === undefined || entry.keyId === opts.keyId) out.push(entry);
      if (out.length === want) break;
    }
    if (page.length < PAGE) break;
    end = `(${page[page.length - 1]![0]}`;
  }
  return out;
}

/**
 * Every entry of the account's stream, oldest first, a page at a time; with `range`, only those
 * whose stream id lies in it (ids are `<Redis ms>-<seq>`, so a bare ms bound is a time bound).
 */
export async function* ledgerEntries(
  redis: Redis,
  accountId: string,
  range: { start?: string; end?: string } = {},
): AsyncGenerator<UsageEntry> {
  const stream = accountKeys(accountId).usage;
  let start = range.start ?? '-';
  const end = range.end ?? '+';
  for (;;) {
    const page = await redis.xrange(stream, start, end, 'COUNT', PAGE);
    for (const [id, fields] of page) yield parseEntry(id, fields);
    if (page.length < PAGE) return;
    start = `(${page[page.length - 1]![0]}`;
  }
}

/** What an entry does to the balance: top-ups and refunds add, charges take, voids move nothing. */
export function balanceEffect(e: Pick<UsageEntry, 'type' | 'amount'>): bigint {
  switch (e.type) {
    case 'charge':
      return -BigInt(e.amount);
    case 'refund':
    case 'topup':
      return BigInt(e.amount);
    case 'void':
      return 0n;
  }
}

/**
 * The audit: top-ups − charges + refunds over the whole stream. It must equal the stored balance
 * at any quiet moment; a difference means a write bypassed the metering scripts.
 */
export async function recomputeBalanceFromStream(redis: Redis, accountId: string): Promise<number> {
  let balance = 0n;
  for await (const e of ledgerEntries(redis, accountId)) balance += balanceEffect(e);
  return Number(balance);
}

function emptyRow(hourStartMs: number, keyId: string | null, model: string): UsageRow {
  return {
    hour: new Date(hourStartMs).toISOString(),
    hourStartMs,
    keyId,
    model,
    ...zeroCounts(),
    cost: 0,
    refunded: 0,
  };
}

/**
 * One stream entry's fields (name, value, name, value, …) as a UsageEntry. One pass with a switch,
 * no Map: the archiver parses every entry of every stream, and a Map per entry was a fifth of its
 * garbage. A field given twice keeps its last value; a field missing keeps the default below.
 */
export function parseEntry(id: string, flat: string[]): UsageEntry {
  const e: UsageEntry = {
    id,
    atMs: 0,
    type: 'charge',
    opId: '',
    amount: 0,
    cost: null,
    short: 0,
    held: null,
    source: null,
    reason: null,
    leaseId: null,
    refundOf: null,
    balance: 0,
    keyId: null,
    model: null,
    kind: null,
    inputTokens: null,
    cachedTokens: null,
    outputTokens: null,
    images: null,
    videoSeconds: null,
    requestId: null,
    note: null,
  };
  let type: string | undefined;
  let ts: number | null = null;
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const v = flat[i + 1]!;
    switch (flat[i]) {
      case 't':
        type = v;
        break;
      case 'ts':
        ts = Number(v);
        break;
      case 'op':
        e.opId = v;
        break;
      case 'amt':
        e.amount = Number(v);
        break;
      case 'cost':
        e.cost = Number(v);
        break;
      case 'short':
        e.short = Number(v);
        break;
      case 'held':
        e.held = Number(v);
        break;
      case 'src':
        e.source = v;
        break;
      case 'reason':
        e.reason = v;
        break;
      case 'lease':
        e.leaseId = v;
        break;
      case 'of':
        e.refundOf = v;
        break;
      case 'bal':
        e.balance = Number(v);
        break;
      case 'key':
        e.keyId = v;
        break;
      case 'model':
        e.model = v;
        break;
      case 'kind':
        e.kind = v as UsageRecord['kind'];
        break;
      case 'in':
        e.inputTokens = Number(v);
        break;
      case 'cached':
        e.cachedTokens = Number(v);
        break;
      case 'out':
        e.outputTokens = Number(v);
        break;
      case 'img':
        e.images = Number(v);
        break;
      case 'vsec':
        e.videoSeconds = Number(v);
        break;
      case 'req':
        e.requestId = v;
        break;
      case 'note':
        e.note = v;
        break;
    }
  }
  if (type !== 'charge' && type !== 'refund' && type !== 'topup' && type !== 'void') {
    throw new Error(`usage entry ${id} has unknown type '${type}'`);
  }
  e.type = type;
  e.atMs = ts ?? Number(id.split('-')[0]);
  return e;
}
