// The ledger check anyone can run (`modelplane ledger check`): for each account, the stored balance
// is what its usage stream says (top-ups − charges + refunds, each entry's running balance
// included), what is held is the sum of its open holds and leases, no hold outlived its expiry
// unswept, every hold is in the sweeper's index, and no charge was refunded beyond what it took.
// The keys' spend (keySpend, for their monthly spend limits) adds up too: each key's month spend is
// its charges − refunds in the stream that month, and each limited key's `held` is the sum of its
// open holds, with no hold filed under a key after it is gone; in the same hash, each key's rate
// windows hold shares of open holds only, and its calls running are its holds' slots.
// `ledgerOfRequest` finds one call's entries (`modelplane ledger show`).

import { unindexedHolds } from '../billing/hold-index-resync.ts';
import { ACCOUNT_SPEND_KEY, spendPeriods } from '../billing/key-spend.ts';
import { ARCHIVER_GROUP } from '../journal/archiver.ts';
import type { Journal } from '../journal/journal.ts';
import type { Redis } from '../redis/client.ts';
import { accountKeys, globalKeys } from '../redis/keyspace.ts';
import { balanceEffect, ledgerEntries, parseEntry, type UsageEntry } from '../usage/usage.ts';

export interface AccountLedger {
  accountId: string;
  balance: number;
  held: number;
  /** Open holds and leases, with their expiry (Redis time, ms). */
  holds: { id: string; amount: number; expiresAt: number | null }[];
  entries: number;
  /** Σ short over the charges: cost that could not be collected. */
  uncollected: number;
  voids: number;
  problems: string[];
}

export interface LedgerCheckOptions {
  /**
   * How long past its expiry a hold may still stand before it counts as stranded: the sweeper's
   * interval plus a leader hand-over (HOLD_SWEEP_INTERVAL_MS and the lock ttl).
   */
  toleranceMs: number;
  /**
   * The durable journal (DATABASE_URL). With it, the stream may have been trimmed by the archiver:
   * the balance must be the journal's plus the entries not yet archived, and every committed top-up
   * and archived entry must still be in Redis — each difference is named.
   */
  journal?: Journal;
}

/** Checks one account. Reads its keys in one MULTI (one slot), so the snapshot is consistent. */
export async function checkAccountLedger(
  redis: Redis,
  accountId: string,
  opts: LedgerCheckOptions,
): Promise<AccountLedger> {
  const k = accountKeys(accountId);
  const snap = await redis
    .multi()
    .hmget(k.account, 'balance', 'held')
    .hgetall(k.holds)
    .zrange(k.holdExpiry, 0, -1, 'WITHSCORES')
    .xrevrange(k.usage, '+', '-', 'COUNT', 1)
    .time()
    .hgetall(k.keySpend)
    .exec();
  if (snap === null) throw new Error('the ledger snapshot was aborted');
  for (const [err] of snap) if (err) throw err;
  const [balanceRaw, heldRaw] = snap[0]![1] as (string | null)[];
  const holdsRaw = snap[1]![1] as Record<string, string>;
  const expiryRaw = snap[2]![1] as string[];
  const last = snap[3]![1] as [string, string[]][];
  const [sec, usec] = snap[4]![1] as [string, string];
  const keySpendRaw = snap[5]![1] as Record<string, string>;
  const now = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);

  const problems: string[] = [];
  const balance = Number(balanceRaw ?? 0);
  const held = Number(heldRaw ?? 0);
  const expiries = new Map<string, number>();
  for (let i = 0; i < expiryRaw.length; i += 2) expiries.set(expiryRaw[i]!, Number(expiryRaw[i + 1]));

  // The stream up to the snapshot's last entry: later entries belong to writes after it.
  const lastId = last[0]?.[0];
  // Without a journal the stream holds everything from the first top-up; with one, the archiver
  // trims what it archived, and the chain starts at the first entry still there.
  let running: bigint | null = opts.journal ? null : 0n;
  const streamOps: {
    opId: string;
    effect: bigint;
    keyId: string | null;
    atMs: number;
    type: string;
    amount: number;
  }[] = [];
  let entries = 0;
  let uncollected = 0;
  let voids = 0;
  const charged = new Map<string, number>();
  const refunded = new Map<string, number>();
  /** `<keyId>:<YYYYMM>` → the stream's charges − refunds of that key in that month. */
  const keyMonths = new Map<string, number>();
  if (lastId !== undefined) {
    for await (const e of ledgerEntries(redis, accountId)) {
      if (compareIds(e.id, lastId) > 0) break;
      entries++;
      if (running === null) running = BigInt(e.balance) - balanceEffect(e);
      running += balanceEffect(e);
      streamOps.push({
        opId: e.opId,
        effect: balanceEffect(e),
        keyId: e.keyId,
        atMs: e.atMs,
        type: e.type,
        amount: e.amount,
      });
      if (BigInt(e.balance) !== running) {
        problems.push(
          `entry ${e.id} (${e.opId}) records balance ${e.balance}, but the entries up to it sum to ${running}`,
        );
        running = BigInt(e.balance); // report each break once, not every entry after it
      }
      if (e.type === 'charge') {
        uncollected += e.short;
        charged.set(e.opId, e.amount);
      } else if (e.type === 'void') voids++;
      else if (e.type === 'refund' && e.refundOf !== null)
        refunded.set(e.refundOf, (refunded.get(e.refundOf) ?? 0) + e.amount);
      if (e.keyId !== null && (e.type === 'charge' || e.type === 'refund')) {
        addKeySpend(keyMonths, e.keyId, e.atMs, e.type === 'charge' ? e.amount : -e.amount);
      }
    }
  }
  if (running !== null && running !== BigInt(balance)) {
    problems.push(
      `balance is ${balance}, but top-ups − charges + refunds in the usage stream are ${running}`,
    );
  }
  if (opts.journal) {
    const j = await journalProblems(redis, opts.journal, accountId, balance, lastId, streamOps);
    problems.push(...j.problems);
    // Charges and key spend archived and trimmed away are in the journal.
    const missing = [...refunded.keys()].filter((of) => !charged.has(of));
    for (const r of await opts.journal.records(accountId, missing)) charged.set(r.id, r.amount);
    keyMonths.clear();
    for (const [km, v] of await opts.journal.keyMonths(accountId)) keyMonths.set(km, v);
    withAccountSpend(keyMonths);
    for (const o of streamOps) {
      if (j.archived.has(o.opId) || o.keyId === null || (o.type !== 'charge' && o.type !== 'refund'))
        continue;
      addKeySpend(keyMonths, o.keyId, o.atMs, o.type === 'charge' ? o.amount : -o.amount);
    }
  }
  for (const [of, amount] of refunded) {
    const c = charged.get(of);
    if (c === undefined) problems.push(`refunds of ${of} (${amount}) name no charge in the stream`);
    else if (amount > c) problems.push(`refunds of ${of} total ${amount}, more than it charged (${c})`);
  }

  const holds = Object.entries(holdsRaw).map(([id, amount]) => ({
    id,
    amount: Number(amount),
    expiresAt: expiries.get(id) ?? null,
  }));
  const sumHeld = holds.reduce((s, h) => s + h.amount, 0);
  if (sumHeld !== held) problems.push(`held is ${held}, but its open holds and leases sum to ${sumHeld}`);
  if (held < 0) problems.push(`held is negative (${held})`);
  if (balance < held) problems.push(`balance ${balance} is below what is held (${held})`);
  for (const h of holds) {
    if (h.expiresAt === null) problems.push(`hold ${h.id} has no expiry, so nothing would ever void it`);
    else if (now - h.expiresAt > opts.toleranceMs) {
      problems.push(
        `hold ${h.id} (${h.amount}) expired ${Math.round((now - h.expiresAt) / 1000)} s ago and its owner is gone, but it was not voided`,
      );
    }
  }
  for (const id of expiries.keys()) {
    if (!(id in holdsRaw)) problems.push(`expiry entry ${id} has no hold`);
  }
  problems.push(...keySpendProblems(keySpendRaw, keyMonths, holdsRaw));
  const unfiled = await unindexedHolds(
    redis,
    accountId,
    holds.map((h) => h.id),
  );
  holds.forEach((h, i) => {
    if (unfiled[i]) problems.push(`hold ${h.id} is missing from the sweeper's index`);
  });
  return { accountId, balance, held, holds, entries, uncollected, voids, problems };
}

/**
 * Redis against the journal: balance = the journal's customer credit (up to the snapshot's last
 * entry) + what the entries not yet archived move; every top-up committed in the journal is in
 * Redis's stream (or was archived from it); nothing archived from the stream is missing from it.
 */
async function journalProblems(
  redis: Redis,
  journal: Journal,
  accountId: string,
  balance: number,
  lastId: string | undefined,
  streamOps: readonly { opId: string; effect: bigint }[],
): Promise<{ problems: string[]; archived: Set<string> }> {
  const problems: string[] = [];
  const stream = accountKeys(accountId).usage;
  const inStream = new Set(streamOps.map((o) => o.opId));
  const archived = await journal.present(accountId, [...inStream]);
  let unarchived = 0n;
  let unarchivedCount = 0;
  for (const o of streamOps)
    if (!archived.has(o.opId)) {
      unarchived += o.effect;
      unarchivedCount++;
    }
  let journalBalance = await journal.creditBalance(accountId);
  // Archived entries this Redis's archiver group was never given (it trims only what it was given
  // and acknowledged) must still be in its stream. One the snapshot did not read either came after
  // the snapshot (it is in Redis now: left out of the sum) or Redis lost it (a failover): named.
  const { lastGenerated, archivedUpTo } = await streamInfo(redis, stream);
  for (const r of await journal.archivedAfter(accountId, archivedUpTo)) {
    if (inStream.has(r.id) || r.streamId === null) continue;
    const now = await redis.xrange(stream, r.streamId, r.streamId);
    const later = lastId !== undefined && compareIds(r.streamId, lastId) > 0;
    if (later && now[0] !== undefined && parseEntry(now[0][0], now[0][1]).opId === r.id) {
      journalBalance -= balanceEffect({ type: r.kind, amount: r.amount });
      continue;
    }
    problems.push(
      `${r.id} (${r.kind} ${r.amount}) was archived from Redis stream entry ${r.streamId}, but Redis no longer has it (its stream ends at ${lastId ?? lastGenerated}): Redis lost it`,
    );
  }
  if (journalBalance + unarchived !== BigInt(balance))
    problems.push(
      `balance is ${balance} in Redis, but the journal says ${journalBalance} and the ${unarchivedCount} entries not yet archived move ${unarchived} (${journalBalance + unarchived}): they differ by ${BigInt(balance) - journalBalance - unarchived}`,
    );
  for (const t of await journal.unseenTopUps({ accountId })) {
    if (!inStream.has(t.id))
      problems.push(
        `top-up ${t.id.slice('topup:'.length)} (${t.amount}) is committed in the journal but not in Redis (the reconciler credits it again)`,
      );
  }
  const books = await journal.bookTotals(accountId);
  if (books.debits !== books.credits)
    problems.push(`the journal's debits (${books.debits}) and credits (${books.credits}) differ`);
  return { problems, archived };
}

/**
 * The last id the stream gave, and the last the archiver's group was given (entries up to it may be
 * archived and trimmed; '0-0' for none, or no stream).
 */
async function streamInfo(
  redis: Redis,
  stream: string,
): Promise<{ lastGenerated: string; archivedUpTo: string }> {
  let lastGenerated = '0-0';
  let archivedUpTo = '0-0';
  try {
    const info = (await redis.xinfo('STREAM', stream)) as unknown[];
    const i = info.indexOf('last-generated-id');
    if (i >= 0) lastGenerated = String(info[i + 1]);
    for (const g of (await redis.xinfo('GROUPS', stream)) as unknown[][]) {
      const name = g[g.indexOf('name') + 1];
      if (name === ARCHIVER_GROUP) archivedUpTo = String(g[g.indexOf('last-delivered-id') + 1]);
    }
  } catch {
    // no stream: nothing was ever there
  }
  return { lastGenerated, archivedUpTo };
}

/** A key's charge or refund counts in each period it falls in (month, day, week), as the scripts count it. */
function addKeySpend(into: Map<string, number>, keyId: string, atMs: number, amount: number): void {
  for (const p of spendPeriods(atMs).split('|')) {
    for (const kp of [`${keyId}:${p}`, `${ACCOUNT_SPEND_KEY}:${p}`])
      into.set(kp, (into.get(kp) ?? 0) + amount);
  }
}

/** The account's spend across its keys (`*`) per period: the sum of its keys' (journal figures). */
function withAccountSpend(keyMonths: Map<string, number>): void {
  for (const [km, v] of [...keyMonths]) {
    const period = km.slice(km.lastIndexOf(':') + 1);
    const ak = `${ACCOUNT_SPEND_KEY}:${period}`;
    keyMonths.set(ak, (keyMonths.get(ak) ?? 0) + v);
  }
}

/**
 * Whether the account's own spend (`*`) was counted for the whole of `period` (YYYYMM, YYYYMMDD or
 * wYYYYMMDD): from its first charge for an account that had spent nothing before (`since` '0');
 * for an install upgraded mid-period, only periods beginning after the day it began (common.lua
 * add_spent); never when nothing has counted it yet.
 */
export function accountSpendCounted(period: string, since: string | undefined): boolean {
  if (since === undefined) return false;
  if (since === '0') return true;
  const start = (s: string) => (s.startsWith('w') ? s.slice(1) : s.length === 6 ? `${s}01` : s);
  // The day it began is left out too: part of it came before.
  return start(period) > start(since);
}

/**
 * The keySpend hash against the stream's per key and month sums and the open holds: `spent:` equals
 * the stream (a missing field is 0), `held:` the sum of the holds filed under the key with `h:`,
 * and every `h:` names a hold that is still open; the keys' rate windows in the same hash too.
 */
function keySpendProblems(
  raw: Record<string, string>,
  streamMonths: ReadonlyMap<string, number>,
  holds: Record<string, string>,
): string[] {
  const problems: string[] = [];
  const spent = new Map<string, number>();
  const held = new Map<string, number>();
  const holdsOfKey = new Map<string, number>();
  const running = { problems: [] as string[], slots: new Map<string, number>() };
  for (const [field, value] of Object.entries(raw)) {
    if (field === `since:${ACCOUNT_SPEND_KEY}`) continue;
    if (field.startsWith('spent:')) spent.set(field.slice(6), Number(value));
    else if (field.startsWith('held:')) held.set(field.slice(5), Number(value));
    else if (field.startsWith('h:') || field.startsWith('ah:')) {
      // `ah:` files a hold under the account's budget (its `held:*`), as `h:` under a key's.
      const holdId = field.slice(field.indexOf(':') + 1);
      const amount = holds[holdId];
      if (amount === undefined)
        problems.push(`hold ${holdId} is gone, but it is still filed under key ${value}`);
      else holdsOfKey.set(value, (holdsOfKey.get(value) ?? 0) + Number(amount));
    } else if (!windowField(field, value, holds, running))
      problems.push(`unknown key spend field '${field}'`);
  }
  problems.push(...runningProblems(raw, running));
  const since = raw[`since:${ACCOUNT_SPEND_KEY}`];
  for (const km of new Set([...spent.keys(), ...streamMonths.keys()])) {
    if (km.startsWith(`${ACCOUNT_SPEND_KEY}:`) && !accountSpendCounted(km.slice(2), since)) continue;
    const recorded = spent.get(km) ?? 0;
    const summed = streamMonths.get(km) ?? 0;
    if (recorded !== summed) {
      const sep = km.lastIndexOf(':');
      problems.push(
        `key ${km.slice(0, sep)} spent ${recorded} in ${km.slice(sep + 1)}, but its charges − refunds in the usage stream in that period are ${summed}`,
      );
    }
  }
  for (const key of new Set([...held.keys(), ...holdsOfKey.keys()])) {
    const recorded = held.get(key) ?? 0;
    const summed = holdsOfKey.get(key) ?? 0;
    if (recorded !== summed)
      problems.push(`key ${key} holds ${recorded}, but the open holds filed under it sum to ${summed}`);
  }
  return problems;
}

/**
 * The keys' rate windows (core/billing/lua/windows.lua) in the same hash: buckets (`wr:`, `wi:`,
 * `wo:`), a key's running calls' starts (`wt:`) and recent call duration (`wd:`) are judged by
 * nothing but their shape; a hold's share (`wh:`, its start at the end when it took a slot) must
 * name an open hold, and its running slot is counted toward its key. False for a field that is
 * none of them.
 */
function windowField(
  field: string,
  value: string,
  holds: Record<string, string>,
  running: { problems: string[]; slots: Map<string, number> },
): boolean {
  const kind = field.slice(0, 3);
  if (kind === 'wr:' || kind === 'wi:' || kind === 'wo:') return /^-?\d+:\d+:\d+$/.test(value);
  if (kind === 'wc:') return true;
  if (kind === 'wt:') return /^\d+( \d+)*$/.test(value);
  if (kind === 'wd:') return /^\d+$/.test(value);
  if (kind !== 'wh:') return false;
  const m = /^([^:]+):\d+:\d+:\d+:([01]):\d+:\d+(?::\d+)?$/.exec(value);
  if (m === null) return false;
  if (holds[field.slice(3)] === undefined)
    running.problems.push(
      `hold ${field.slice(3)} is gone, but its share of key ${m[1]}'s rate windows is still taken`,
    );
  if (m[2] === '1') running.slots.set(m[1]!, (running.slots.get(m[1]!) ?? 0) + 1);
  return true;
}

/** Each key's running calls (`wc:`) are its holds' slots (`wh:`), nothing taken forever. */
function runningProblems(
  raw: Record<string, string>,
  running: { problems: string[]; slots: Map<string, number> },
): string[] {
  const out = [...running.problems];
  const counted = new Map<string, number>();
  for (const [field, value] of Object.entries(raw))
    if (field.startsWith('wc:')) counted.set(field.slice(3), Number(value));
  for (const key of new Set([...counted.keys(), ...running.slots.keys()])) {
    const c = counted.get(key) ?? 0;
    const s = running.slots.get(key) ?? 0;
    if (c !== s) out.push(`key ${key} counts ${c} calls running, but ${s} open holds took a slot`);
  }
  // A start left behind would hold every later estimate of the key's next free slot to it.
  for (const [field, value] of Object.entries(raw)) {
    if (!field.startsWith('wt:')) continue;
    const key = field.slice(3);
    const starts = value.split(' ').length;
    const slots = running.slots.get(key) ?? 0;
    if (starts > slots)
      out.push(`key ${key} keeps ${starts} running calls' starts, but ${slots} open holds took a slot`);
  }
  return out;
}

/** Every account's ledger (or one account's). */
export async function checkLedger(
  redis: Redis,
  opts: LedgerCheckOptions & { accountId?: string },
): Promise<AccountLedger[]> {
  const ids = opts.accountId !== undefined ? [opts.accountId] : await allAccountIds(redis);
  const out: AccountLedger[] = [];
  for (const id of ids) out.push(await checkAccountLedger(redis, id, opts));
  return out;
}

/**
 * One call's entries: its charge (hold and settle in one entry), a void of its hold, refunds of its
 * charge. Searches the given account, else every account's stream.
 */
export async function ledgerOfRequest(
  redis: Redis,
  requestId: string,
  accountId?: string,
): Promise<{ accountId: string; entries: UsageEntry[] }[]> {
  const ids = accountId !== undefined ? [accountId] : await allAccountIds(redis);
  const found: { accountId: string; entries: UsageEntry[] }[] = [];
  const ops = new Set([`settle:${requestId}`, `void:${requestId}`]);
  for (const id of ids) {
    const entries: UsageEntry[] = [];
    for await (const e of ledgerEntries(redis, id)) {
      if (e.requestId === requestId || ops.has(e.opId) || (e.refundOf !== null && ops.has(e.refundOf))) {
        entries.push(e);
        if (e.type === 'charge') ops.add(e.opId); // refunds name the charge's op id
      }
    }
    if (entries.length > 0) found.push({ accountId: id, entries });
  }
  return found;
}

async function allAccountIds(redis: Redis): Promise<string[]> {
  const ids: string[] = [];
  let cursor = '0';
  do {
    const [next, page] = await redis.sscan(globalKeys.accounts, cursor, 'COUNT', 500);
    cursor = next;
    ids.push(...page);
  } while (cursor !== '0');
  return ids.sort();
}

/** Stream ids `ms-seq` compared as numbers. */
function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am - bm || as - bs;
}
