// The console's calls one by one (issue 23 item 5) on a real Redis and a real PostgreSQL: each call
// of the session's account newest first, a page at a time by cursor, from the journal and the stream
// entries not yet archived alike; a deleted key's calls and a rotated key's old calls named as such;
// one call by request id with its charge and refund; another account's request not found; and a
// console without a journal that says usage history needs one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metering } from '../../core/billing/index.ts';
import { newRequestId } from '../../core/ids.ts';
import { Archiver } from '../../core/journal/index.ts';
import { accountKeys } from '../../core/redis/keyspace.ts';
import { recordCallFact, recordRefused } from '../../core/usage/call-facts.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { journalForFile } from '../helpers/postgres.ts';
import { type ConsoleHarness, type Person, startConsole } from './harness.ts';

interface Transfer {
  id: string;
  requestId: string | null;
  at: string;
  type: string;
  keyId: string | null;
  keyName: string | null;
  keyState: string | null;
  model: string | null;
  inputTokens: number | null;
  cachedTokens: number | null;
  outputTokens: number | null;
  cost: string | null;
  amount: string;
  currency: string | null;
  refundOf: string | null;
}
interface Page {
  currency: string | null;
  data: Transfer[];
  nextCursor: string | null;
}

const db = journalForFile();
let c: ConsoleHarness;
let bare: ConsoleHarness;
beforeAll(async () => {
  [c, bare] = await Promise.all([startConsole({}, { journal: db.journal }), startConsole()]);
});
afterAll(async () => {
  await Promise.all([c?.stop(), bare?.stop()]);
});

/** A call as the proxy settles it: a hold, then its charge with the call's usage. */
async function call(
  metering: Metering,
  who: Person,
  keyId: string | null,
  cost: number,
  model = 'Org/Chat-1',
): Promise<string> {
  const requestId = newRequestId();
  await metering.reserve({
    accountId: who.accountId,
    holdId: requestId,
    min: 1,
    max: 10_000_000,
    ttlMs: 60_000,
  });
  await metering.settle({
    accountId: who.accountId,
    holdId: requestId,
    cost,
    usage: { keyId, model, kind: 'chat', inputTokens: 100, cachedTokens: 40, outputTokens: 7, requestId },
  });
  return requestId;
}

describe('calls one by one, from the journal', () => {
  it('KEY-6 KEY-10 newest first, paged by cursor, archived or not; deleted and rotated keys named as such; by key', async () => {
    const owner = await c.newOwner('Calls');
    const s = await c.session(owner);
    const metering = new Metering(c.redis);
    await metering.topUp({ accountId: owner.accountId, topUpId: 'seed', amount: 10_000_000_000 });
    const { key: kept } = await c.keys.create(owner.accountId, { name: 'kept', createdBy: owner.userId });
    const { key: gone } = await c.keys.create(owner.accountId, { name: 'gone', createdBy: owner.userId });
    const made: string[] = [];
    for (let i = 0; i < 4; i++) made.push(await call(metering, owner, kept.id, 1_000_000 * (i + 1)));
    const goneCall = await call(metering, owner, gone.id, 500_000);
    made.push(goneCall);
    // Archived (and trimmed from Redis), then more calls the archiver has not seen yet.
    await new Archiver(c.redis, db.journal).pass();
    expect(await c.redis.xlen(accountKeys(owner.accountId).usage)).toBe(0);
    await c.keys.delete(owner.accountId, gone.id);
    await c.keys.rotate(owner.accountId, kept.id);
    for (let i = 0; i < 3; i++) made.push(await call(metering, owner, kept.id, 2_000_000));

    // Three pages of three, each starting after the last: every call once, newest first.
    const seen: Transfer[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Page = await c.json<Page>(
        s,
        'GET',
        `/usage/calls?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(page.data.length).toBeLessThanOrEqual(3);
      seen.push(...page.data);
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(3);
    expect(seen.map((t) => t.requestId).sort()).toEqual([...made].sort());
    const times = seen.map((t) => Date.parse(t.at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(new Set(seen.map((t) => t.id)).size).toBe(made.length);

    const goneRow = seen.find((t) => t.requestId === goneCall)!;
    expect(goneRow).toMatchObject({
      type: 'charge',
      keyId: gone.id,
      keyName: 'gone',
      keyState: 'deleted',
      model: 'Org/Chat-1',
      inputTokens: 100,
      cachedTokens: 40,
      outputTokens: 7,
      cost: '0.0005',
      amount: '0.0005',
      currency: 'USD',
    });
    // Calls made before the rotation used the old secret; those after, the current one (KEY-5).
    const keptStates = seen.filter((t) => t.keyId === kept.id).map((t) => t.keyState);
    expect(keptStates.filter((x) => x === 'rotated')).toHaveLength(4);
    expect(keptStates.filter((x) => x === 'active')).toHaveLength(3);

    // By key: only the deleted key's one call.
    const byKey = await c.json<Page>(s, 'GET', `/usage/calls?keyId=${gone.id}`);
    expect(byKey.data.map((t) => t.requestId)).toEqual([goneCall]);
    // A range that ends before every call: none.
    const before = await c.json<Page>(s, 'GET', `/usage/calls?from=0&to=${Date.parse(seen.at(-1)!.at)}`);
    expect(before).toEqual({ currency: 'USD', data: [], nextCursor: null });

    // The same list once everything is archived.
    await new Archiver(c.redis, db.journal).pass();
    const all = await c.json<Page>(s, 'GET', '/usage/calls');
    expect(all.data.map((t) => t.id)).toEqual(seen.map((t) => t.id));
    await expectLedgerClean(c.redis, [owner.accountId], 5_000, db.journal);
  });

  it('a cursor that is not one of ours, or a range backwards, is a 400 naming the field', async () => {
    const owner = await c.newOwner('Bad');
    const s = await c.session(owner);
    const bad = await c.call(s, 'GET', '/usage/calls?cursor=bm9wZQ');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: 'invalid_request', param: 'cursor' } });
    const backwards = await c.call(s, 'GET', '/usage/calls?from=2000&to=1000');
    expect(backwards.status).toBe(400);
    expect(await backwards.json()).toMatchObject({ error: { code: 'invalid_request', param: 'from' } });
  });

  it('a call by request id: its charge and refund; another account’s request is not found', async () => {
    const owner = await c.newOwner('Lookup');
    const other = await c.newOwner('Other');
    const s = await c.session(owner);
    const so = await c.session(other);
    const metering = new Metering(c.redis);
    await metering.topUp({ accountId: owner.accountId, topUpId: 'seed', amount: 1_000_000_000 });
    await metering.topUp({ accountId: other.accountId, topUpId: 'seed', amount: 1_000_000_000 });
    const { key } = await c.keys.create(owner.accountId, { name: 'main', createdBy: owner.userId });
    const refunded = await call(metering, owner, key.id, 3_000_000);
    await metering.refund({
      accountId: owner.accountId,
      refundId: `r-${refunded}`,
      of: `settle:${refunded}`,
      amount: 1_000_000,
      usage: { keyId: key.id, model: 'Org/Chat-1', kind: 'chat', requestId: refunded },
    });
    // The charge archived, the refund not yet: the lookup joins both.
    await new Archiver(c.redis, db.journal).pass();
    await metering.refund({
      accountId: owner.accountId,
      refundId: `r2-${refunded}`,
      of: `settle:${refunded}`,
      amount: 500_000,
      usage: { keyId: key.id, model: 'Org/Chat-1', kind: 'chat', requestId: refunded },
    });
    const theirs = await call(metering, other, null, 1_000_000);

    const got = await c.json<{ requestId: string; currency: string; transfers: Transfer[] }>(
      s,
      'GET',
      `/usage/calls/${refunded}`,
    );
    expect(got.requestId).toBe(refunded);
    expect(got.transfers.map((t) => [t.type, t.amount, t.refundOf])).toEqual([
      ['charge', '0.003', null],
      ['refund', '0.001', `settle:${refunded}`],
      ['refund', '0.0005', `settle:${refunded}`],
    ]);
    expect(got.transfers[0]).toMatchObject({ keyName: 'main', keyState: 'active', currency: 'USD' });

    // Another account's request, and one that never was: the same 404.
    for (const id of [theirs, newRequestId()]) {
      const res = await c.call(s, 'GET', `/usage/calls/${id}`);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ error: { code: 'not_found', param: 'requestId' } });
    }
    // Its owner sees it.
    expect(
      (await c.json<{ transfers: Transfer[] }>(so, 'GET', `/usage/calls/${theirs}`)).transfers,
    ).toHaveLength(1);
    const odd = await c.call(s, 'GET', '/usage/calls/has%20space');
    expect(odd.status).toBe(400);
    await expectLedgerClean(c.redis, [owner.accountId, other.accountId], 5_000, db.journal);
  });
});

describe('without a journal', () => {
  it('the session says usage history is off, and both routes answer 404 saying it needs the journal', async () => {
    const owner = await bare.newOwner('Bare');
    const s = await bare.session(owner);
    expect(await bare.json<{ usageHistory: boolean }>(s, 'GET', '/session')).toMatchObject({
      usageHistory: false,
    });
    expect(
      await c.json<{ usageHistory: boolean }>(await c.session(await c.newOwner('J')), 'GET', '/session'),
    ).toMatchObject({
      usageHistory: true,
    });
    for (const path of ['/usage/calls', `/usage/calls/${newRequestId()}`]) {
      const res = await bare.call(s, 'GET', path);
      expect(res.status).toBe(404);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('not_found');
      expect(body.error.message).toMatch(/needs the durable journal.*DATABASE_URL/);
    }
  });
});

describe('what a call did besides its money (issue 37 item 7)', () => {
  it('BILL-6 each charge with its status, latency, TTFT and finish reason; refusals listed at zero cost; each key’s last use', async () => {
    const owner = await c.newOwner('Facts');
    const s = await c.session(owner);
    const metering = new Metering(c.redis);
    await metering.topUp({ accountId: owner.accountId, topUpId: 'seed', amount: 1_000_000_000 });
    const { key } = await c.keys.create(owner.accountId, { name: 'main', createdBy: owner.userId });
    const { key: idle } = await c.keys.create(owner.accountId, { name: 'idle', createdBy: owner.userId });
    const streamed = await call(metering, owner, key.id, 2_000_000);
    const unknown = await call(metering, owner, key.id, 1_000_000);
    // As the proxy records them when each response ends (proxy/plugins/call-facts.ts).
    await recordCallFact(
      c.redis,
      owner.accountId,
      { requestId: streamed, keyId: key.id },
      { status: 200, latencyMs: 1234, ttftMs: 87, finishReason: 'length' },
    );
    const refusedId = newRequestId();
    await recordRefused(c.redis, owner.accountId, {
      requestId: refusedId,
      status: 429,
      code: 'insufficient_quota',
      latencyMs: 4,
      keyId: key.id,
      model: 'Org/Chat-1',
      route: '/v1/chat/completions',
    });
    const before = await metering.balance(owner.accountId);

    const page = await c.json<Page>(s, 'GET', '/usage/calls');
    const row = (id: string) =>
      page.data.find((t) => t.requestId === id) as Transfer & Record<string, unknown>;
    expect(row(streamed)).toMatchObject({ status: 200, latencyMs: 1234, ttftMs: 87, finishReason: 'length' });
    // A call whose facts are not kept (recorded before, or lost): its money as ever, the rest null.
    expect(row(unknown)).toMatchObject({ cost: '0.001', status: null, latencyMs: null, finishReason: null });
    const one = await c.json<{ transfers: Record<string, unknown>[] }>(s, 'GET', `/usage/calls/${streamed}`);
    expect(one.transfers[0]).toMatchObject({ ttftMs: 87, finishReason: 'length' });

    const refused = await c.json<{ data: Record<string, unknown>[] }>(s, 'GET', '/usage/refused');
    expect(refused.data).toEqual([
      expect.objectContaining({
        requestId: refusedId,
        status: 429,
        code: 'insufficient_quota',
        keyId: key.id,
        keyName: 'main',
        model: 'Org/Chat-1',
        cost: '0',
      }),
    ]);
    expect((await c.json<{ data: unknown[] }>(s, 'GET', `/usage/refused?keyId=${idle.id}`)).data).toEqual([]);
    const other = await c.session(await c.newOwner('Not theirs'));
    expect((await c.json<{ data: unknown[] }>(other, 'GET', '/usage/refused')).data).toEqual([]);

    // The key table: last use and this month's spend of every key, in one request.
    const keys = await c.json<{ data: { id: string; lastUsedAt: string | null; monthSpend: string }[] }>(
      s,
      'GET',
      '/keys',
    );
    const used = keys.data.find((k) => k.id === key.id)!;
    expect(Math.abs(Date.parse(used.lastUsedAt!) - Date.now())).toBeLessThan(60_000);
    expect(used.monthSpend).toBe('0.003');
    expect(keys.data.find((k) => k.id === idle.id)).toMatchObject({ lastUsedAt: null, monthSpend: '0' });
    // Reading all that moved no money.
    expect(await metering.balance(owner.accountId)).toEqual(before);
    await expectLedgerClean(c.redis, [owner.accountId], 5_000, db.journal);
  });
});
