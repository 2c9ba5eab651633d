// Calls one by one a page at a time (./call-pages.ts) on a real Redis and a real PostgreSQL, with
// more entries than one stream read takes: half archived, half still in the stream, every call on
// exactly one page, newest first, and the same pages once everything is archived.
import { describe, expect, it } from 'vitest';
import { expectLedgerClean } from '../../test/helpers/ledger.ts';
import { journalForFile } from '../../test/helpers/postgres.ts';
import { redisForFile } from '../../test/helpers/redis-per-file.ts';
import { Accounts } from '../accounts/accounts.ts';
import { Metering } from '../billing/index.ts';
import { newRequestId } from '../ids.ts';
import type { UsageEntry } from '../usage/usage.ts';
import { Archiver } from './archiver.ts';
import { callPage, decodeCursor } from './call-pages.ts';

const r = redisForFile();
const j = journalForFile();

async function pages(accountId: string, limit: number, keyId?: string): Promise<UsageEntry[][]> {
  const out: UsageEntry[][] = [];
  let next: string | null = null;
  do {
    const cursor = next === null ? undefined : decodeCursor(next)!;
    const page: { entries: UsageEntry[]; next: string | null } = await callPage(r.redis, j.journal, {
      accountId,
      fromMs: 0,
      toMs: Date.now() + 1,
      limit,
      ...(keyId ? { keyId } : {}),
      ...(cursor ? { cursor } : {}),
    });
    out.push(page.entries);
    next = page.next;
  } while (next !== null && out.length < 100);
  return out;
}

describe('callPage', () => {
  it('KEY-10 pages over the journal and a stream longer than one read: each call once, newest first, by key', async () => {
    const account = await new Accounts(r.redis).create({ name: 'Pages', country: 'US' });
    const metering = new Metering(r.redis);
    await metering.topUp({ accountId: account.id, topUpId: 'seed', amount: 1_000_000_000_000 });
    const made: string[] = [];
    const settle = async (keyId: string) => {
      const requestId = newRequestId();
      await metering.reserve({ accountId: account.id, holdId: requestId, min: 1, max: 1_000, ttlMs: 60_000 });
      await metering.settle({
        accountId: account.id,
        holdId: requestId,
        cost: 1_000,
        usage: { keyId, model: 'Org/Chat-1', kind: 'chat', inputTokens: 1, outputTokens: 1, requestId },
      });
      made.push(requestId);
    };
    for (let i = 0; i < 300; i++) await settle(i % 3 === 0 ? 'key_a' : 'key_b');
    await new Archiver(r.redis, j.journal).pass();
    // More than one XREVRANGE (500) not yet archived.
    for (let i = 0; i < 900; i++) await settle(i % 3 === 0 ? 'key_a' : 'key_b');

    for (const limit of [1000, 250]) {
      const all = await pages(account.id, limit);
      expect(all.length).toBe(Math.ceil(1200 / limit));
      const flat = all.flat();
      expect(flat.map((e) => e.requestId).sort()).toEqual([...made].sort());
      const times = flat.map((e) => e.atMs);
      expect(times).toEqual([...times].sort((a, b) => b - a));
    }
    const byKey = (await pages(account.id, 150, 'key_a')).flat();
    expect(byKey).toHaveLength(400);
    expect(new Set(byKey.map((e) => e.keyId))).toEqual(new Set(['key_a']));

    // Once archived (and trimmed from Redis), the very same pages.
    const before = (await pages(account.id, 250)).map((p) => p.map((e) => e.opId));
    await new Archiver(r.redis, j.journal).pass();
    expect((await pages(account.id, 250)).map((p) => p.map((e) => e.opId))).toEqual(before);
    await expectLedgerClean(r.redis, [account.id], 5_000, j.journal);
  }, 120_000);

  it('a cursor is ours or nothing', () => {
    expect(decodeCursor('bm9wZQ')).toBeNull();
    expect(decodeCursor(Buffer.from('123.settle:req_1').toString('base64url'))).toEqual({
      atMs: 123,
      id: 'settle:req_1',
    });
  });
});
