// The console's JSON API (issue "Console"): sign-in with a revocable session cookie, CSRF on every
// state-changing call, throttled failures, and API Management's key lifecycle — always inside the
// signed-in account. Real Redis, real HTTP on loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metering } from '../../core/billing/index.ts';
import { CatalogueStore } from '../../core/catalogue/index.ts';
import type { ApiKeys } from '../../core/keys/index.ts';
import { scanKeys } from '../../core/redis/client.ts';
import { type ConsoleHarness, type Person, type Signed, startConsole } from './harness.ts';

let h: ConsoleHarness;
let keys: ApiKeys;
const people = {} as Record<'ann' | 'bob', Person>;

beforeAll(async () => {
  h = await startConsole({ CONSOLE_SIGNIN_FAILURES_PER_EMAIL: '3' });
  keys = h.keys;
  people.ann = await h.newOwner('ann');
  people.bob = await h.newOwner('bob');
});
afterAll(async () => h?.stop());

const signIn = (who: Person, password?: string) => h.signIn(who.email, password);
const session = (who: Person): Promise<Signed> => h.session(who);
const call = (s: Signed | null, method: string, path: string, body?: unknown, csrf = true) =>
  h.call(s, method, path, body, csrf);

describe('sign-in', () => {
  it('a right password gives an HttpOnly SameSite=Lax session cookie; who-am-I and sign-out work', async () => {
    const res = await signIn(people.ann);
    expect(res.status).toBe(200);
    const cookie = res.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^mp_session=[A-Za-z0-9_-]{43};/);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    const me = (await res.json()) as { user: { email: string }; account: { id: string }; apiBaseUrl: string };
    expect(me.user.email).toBe(people.ann.email);
    expect(me.account.id).toBe(people.ann.accountId);
    expect(me.apiBaseUrl).toMatch(/\/v1$/);
    const s = { cookie: cookie.split(';')[0]!, csrf: (me as unknown as { csrfToken: string }).csrfToken };
    expect((await call(s, 'GET', '/session')).status).toBe(200);
    // Redis keeps a hash of the session id, never the id a cookie carries.
    const sessionId = s.cookie.slice('mp_session='.length);
    const sessionKeys = await scanKeys(h.redis, 'mp:session:*');
    expect(sessionKeys.length).toBeGreaterThan(0);
    expect(sessionKeys.filter((k) => k.includes(sessionId))).toEqual([]);
    expect((await call(s, 'DELETE', '/session')).status).toBe(200);
    // Revoked, not just forgotten by the browser: the cookie no longer names a session.
    expect(await (await call(s, 'GET', '/session')).json()).toEqual({ signedIn: false });
    expect((await call(s, 'GET', '/keys')).status).toBe(401);
  });

  it('a wrong password is a 401; failed sign-ins past the limit are throttled even with the right password', async () => {
    const who = { ...people.bob };
    for (let i = 0; i < 3; i++) expect((await signIn(who, 'wrong password!')).status).toBe(401);
    const blocked = await signIn(who);
    expect(blocked.status).toBe(429);
    expect(((await blocked.json()) as { error: { code: string } }).error.code).toBe('sign_in_throttled');
    await h.redis.del(`mp:signin-fail:email-addr:${who.email} 127.0.0.1`);
    await h.redis.del('mp:signin-fail:addr:127.0.0.1');
  });
});

describe('API Management keys', () => {
  it('KEY-3 opening the page mints Default once, even from two tabs at once', async () => {
    const s = await session(people.ann);
    const [a, b] = await Promise.all([call(s, 'POST', '/keys/default'), call(s, 'POST', '/keys/default')]);
    const minted = [(await a.json()) as { minted: unknown }, (await b.json()) as { minted: unknown }].filter(
      (x) => x.minted,
    );
    expect(minted).toHaveLength(1);
    expect(
      ((await (await call(s, 'POST', '/keys/default')).json()) as { minted: unknown }).minted,
    ).toBeNull();
    const list = (await (await call(s, 'GET', '/keys')).json()) as { data: { name: string; key: string }[] };
    expect(list.data.map((k) => k.name)).toEqual(['Default']);
    expect(list.data[0]!.key).toMatch(/^sk-…[0-9a-f]{4}$/);
  });

  it('KEY-1 KEY-4 KEY-5 KEY-6 generate (name rules), show, rotate (same id, old secret dead), delete (final)', async () => {
    const s = await session(people.ann);
    const tooLong = await call(s, 'POST', '/keys', { name: 'x'.repeat(101) });
    expect(tooLong.status).toBe(400);
    const created = await call(s, 'POST', '/keys', { name: 'ci' });
    expect(created.status).toBe(200);
    const { key, secret } = (await created.json()) as { key: { id: string }; secret: string };
    expect(secret).toMatch(/^sk-service-[0-9a-f]{48}$/);
    expect((await call(s, 'POST', '/keys', { name: 'CI' })).status).toBe(400); // unique among active keys
    expect(await keys.authenticate(secret)).toMatchObject({ accountId: people.ann.accountId, keyId: key.id });
    const shown = await call(s, 'GET', `/keys/${key.id}/secret`);
    expect(((await shown.json()) as { secret: string }).secret).toBe(secret);
    const rotated = (await (await call(s, 'POST', `/keys/${key.id}/rotate`)).json()) as {
      key: { id: string };
      secret: string;
    };
    expect(rotated.key.id).toBe(key.id);
    expect(await keys.authenticate(secret)).toBeNull();
    expect(await keys.authenticate(rotated.secret)).not.toBeNull();
    expect((await call(s, 'DELETE', `/keys/${key.id}`)).status).toBe(200);
    expect(await keys.authenticate(rotated.secret)).toBeNull();
    const list = (await (await call(s, 'GET', '/keys')).json()) as { data: { id: string }[] };
    expect(list.data.map((k) => k.id)).not.toContain(key.id);
    expect((await call(s, 'GET', `/keys/${key.id}/secret`)).status).toBe(404);
  });

  it('KEY-2 a key is renamed (issue 48 item 10): the name rules in words, the secret kept, a member only their own, never without CSRF or across accounts', async () => {
    const s = await session(people.ann);
    const made = async (name: string, who = s) =>
      (await (await call(who, 'POST', '/keys', { name })).json()) as { key: { id: string }; secret: string };
    const { key, secret } = await made('to rename');
    await made('in use');
    const renamed = await call(s, 'PATCH', `/keys/${key.id}`, { name: 'renamed' });
    expect(renamed.status).toBe(200);
    expect(((await renamed.json()) as { key: { id: string; name: string } }).key).toMatchObject({
      id: key.id,
      name: 'renamed',
    });
    expect(await keys.authenticate(secret)).toMatchObject({ keyId: key.id });
    const taken = await call(s, 'PATCH', `/keys/${key.id}`, { name: 'In Use' });
    expect(taken.status).toBe(400);
    expect(((await taken.json()) as { error: unknown }).error).toMatchObject({
      param: 'name',
      message: 'Another key of this account is already named “In Use”: choose another name.',
    });
    const empty = await call(s, 'PATCH', `/keys/${key.id}`, { name: '' });
    expect(((await empty.json()) as { error: unknown }).error).toMatchObject({
      param: 'name',
      message: 'Give the key a name.',
    });
    expect((await call(s, 'PATCH', `/keys/${key.id}`, {})).status).toBe(400); // nothing to change
    expect((await call(s, 'PATCH', `/keys/${key.id}`, { name: 'x' }, false)).status).toBe(403); // no CSRF
    expect((await call(await session(people.bob), 'PATCH', `/keys/${key.id}`, { name: 'x' })).status).toBe(
      404,
    );
    // A member renames the keys they made, not an owner's.
    const member = await h.newMember(people.ann.accountId, 'ann-renamer');
    const ms = await session(member);
    const theirs = await made('member made', ms);
    expect((await call(ms, 'PATCH', `/keys/${theirs.key.id}`, { name: 'member renamed' })).status).toBe(200);
    const refused = await call(ms, 'PATCH', `/keys/${key.id}`, { name: 'hijacked' });
    expect(refused.status).toBe(403);
    expect((await keys.get(people.ann.accountId, key.id))?.name).toBe('renamed');
  });

  it('no route changes state without a session (401) or without the CSRF token (403); Show Key needs it too', async () => {
    const s = await session(people.ann);
    const { key } = (await (await call(s, 'POST', '/keys', { name: 'guarded' })).json()) as {
      key: { id: string };
    };
    const stateChanging: [string, string, unknown?][] = [
      ['POST', '/keys', { name: 'x' }],
      ['POST', '/keys/default'],
      ['POST', `/keys/${key.id}/rotate`],
      ['DELETE', `/keys/${key.id}`],
      ['DELETE', '/session'],
      ['GET', `/keys/${key.id}/secret`],
    ];
    for (const [method, path, body] of stateChanging) {
      expect([method, path, (await call(null, method, path, body)).status]).toEqual([method, path, 401]);
      expect([method, path, (await call(s, method, path, body, false)).status]).toEqual([method, path, 403]);
      expect([method, path, (await call({ ...s, csrf: `${s.csrf}x` }, method, path, body)).status]).toEqual([
        method,
        path,
        403,
      ]);
    }
    expect((await call(s, 'GET', '/keys')).status).toBe(200); // the key survived every refused call
    expect(await keys.get(people.ann.accountId, key.id)).toMatchObject({ status: 'active' });
  });

  it("one account can never read or change another's keys", async () => {
    const ann = await session(people.ann);
    const bob = await session(people.bob);
    const { key } = (await (await call(ann, 'POST', '/keys', { name: 'anns' })).json()) as {
      key: { id: string };
    };
    for (const [method, path] of [
      ['GET', `/keys/${key.id}/secret`],
      ['POST', `/keys/${key.id}/rotate`],
      ['DELETE', `/keys/${key.id}`],
    ] as const) {
      expect([method, path, (await call(bob, method, path)).status]).toEqual([method, path, 404]);
    }
    const bobs = (await (await call(bob, 'GET', '/keys')).json()) as { data: { id: string }[] };
    expect(bobs.data.map((k) => k.id)).not.toContain(key.id);
    expect(await keys.get(people.ann.accountId, key.id)).toMatchObject({ status: 'active' });
  });
});

describe('spend limits on keys', () => {
  it('a limit set at creation or later, shown with the month’s spend; a bad amount is a 400 naming spendLimit', async () => {
    const s = await session(people.bob);
    const bad = await call(s, 'POST', '/keys', { name: 'capped?', spendLimit: '5,00' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('spendLimit');
    const { key, secret } = (await (
      await call(s, 'POST', '/keys', { name: 'capped', spendLimit: '5' })
    ).json()) as {
      key: { id: string; spendLimit: string | null };
      secret: string;
    };
    expect(key.spendLimit).toBe('5');
    expect((await keys.authenticate(secret))?.spendLimit).toBe(5_000_000_000);

    const metering = new Metering(h.redis);
    await metering.topUp({ accountId: people.bob.accountId, topUpId: 'limit-top', amount: 3_000_000_000 });
    await metering.charge({
      accountId: people.bob.accountId,
      chargeId: 'limit-charge',
      cost: 1_250_000_000,
      usage: { keyId: key.id, model: 'Org/M', kind: 'video', videoSeconds: 1 },
    });
    const listed = (await (await call(s, 'GET', '/keys')).json()) as {
      data: { id: string; spendLimit: string | null; monthSpend: string }[];
    };
    expect(listed.data.find((k) => k.id === key.id)).toMatchObject({ spendLimit: '5', monthSpend: '1.25' });

    const raised = await call(s, 'PATCH', `/keys/${key.id}`, { spendLimit: '7.5' });
    expect(((await raised.json()) as { key: { spendLimit: string } }).key.spendLimit).toBe('7.5');
    const cleared = await call(s, 'PATCH', `/keys/${key.id}`, { spendLimit: null });
    expect(((await cleared.json()) as { key: { spendLimit: string | null } }).key.spendLimit).toBeNull();
    expect((await keys.authenticate(secret))?.spendLimit).toBeNull();
    expect((await call(s, 'PATCH', `/keys/${key.id}`, { spendLimit: '-1' })).status).toBe(400);
  });
});

describe('usage, pricing, billing', () => {
  it('usage by key (deleted keys labelled), model and day comes straight from the rollups; only the own account', async () => {
    const r = h.redis;
    const s = await session(people.ann);
    const { key } = (await (await call(s, 'POST', '/keys', { name: 'metered' })).json()) as {
      key: { id: string };
    };
    const metering = new Metering(r);
    await metering.topUp({ accountId: people.ann.accountId, topUpId: 'usage-top', amount: 10_000_000_000 });
    await metering.charge({
      accountId: people.ann.accountId,
      chargeId: 'usage-charge',
      cost: 1_500_000_000,
      usage: {
        keyId: key.id,
        model: 'Org/M',
        kind: 'chat',
        inputTokens: 100,
        cachedTokens: 40,
        outputTokens: 7,
      },
    });
    await call(s, 'DELETE', `/keys/${key.id}`);
    const byKey = (await (await call(s, 'GET', '/usage?group=key')).json()) as {
      rows: { group: string; label: string; inputTokens: number; cost: string }[];
    };
    expect(byKey.rows).toContainEqual(
      expect.objectContaining({ group: key.id, label: 'metered (deleted)', inputTokens: 100, cost: '1.5' }),
    );
    const byModel = (await (await call(s, 'GET', `/usage?group=model&keyId=${key.id}`)).json()) as {
      rows: { group: string; outputTokens: number }[];
    };
    expect(byModel.rows).toEqual([expect.objectContaining({ group: 'Org/M', outputTokens: 7 })]);
    const byDay = (await (await call(s, 'GET', '/usage')).json()) as { rows: { group: string }[] };
    expect(byDay.rows[0]!.group).toBe(new Date().toISOString().slice(0, 10));
    const bob = await session(people.bob);
    const bobs = (await (await call(bob, 'GET', `/usage?group=key&keyId=${key.id}`)).json()) as {
      rows: unknown[];
    };
    expect(bobs.rows).toEqual([]);
  });

  it('pricing lists what the account may see, in its currency; billing shows balance, held and available', async () => {
    const r = h.redis;
    await new CatalogueStore(r).put({
      id: 'Org/Priced',
      kind: 'chat',
      pricing: { USD: { input: '1', cachedInput: '0.5', output: '2' } },
      contextLength: 8192,
      endpoints: [],
      created: 1,
    });
    await new CatalogueStore(r).put({
      id: 'Org/Euro-Only',
      kind: 'chat',
      pricing: { EUR: { input: '1', output: '1' } },
      endpoints: [],
      created: 1,
    });
    const s = await session(people.ann);
    const pricing = (await (await call(s, 'GET', '/pricing')).json()) as {
      currency: string;
      models: { id: string; price: Record<string, string>; contextLength: number }[];
    };
    expect(pricing.currency).toBe('USD');
    expect(pricing.models.find((m) => m.id === 'Org/Priced')).toMatchObject({
      contextLength: 8192,
      price: { input: '1', cachedInput: '0.5', output: '2' },
    });
    expect(pricing.models.map((m) => m.id)).not.toContain('Org/Euro-Only');
    const billing = (await (await call(s, 'GET', '/billing')).json()) as {
      balance: string;
      held: string;
      available: string;
    };
    expect(billing).toMatchObject({ balance: '8.5', held: '0', available: '8.5' });
    expect((await call(null, 'GET', '/billing')).status).toBe(401);
  });

  it('pricing gives each model the most output tokens a call may ask for: its output limit, else its context length (issue 37 item 3)', async () => {
    const store = new CatalogueStore(h.redis);
    const base = {
      kind: 'chat' as const,
      pricing: { USD: { input: '1', output: '2' } },
      endpoints: [],
      created: 1,
    };
    await store.put({ ...base, id: 'Org/Capped', contextLength: 8192, maxOutputTokens: 1024 });
    await store.put({ ...base, id: 'Org/Context-Only', contextLength: 4096 });
    await store.put({ ...base, id: 'Org/Unbounded' });
    const s = await session(people.ann);
    const { models } = (await (await call(s, 'GET', '/pricing')).json()) as {
      models: { id: string; maxOutputTokens: number | null }[];
    };
    const limit = (id: string) => models.find((m) => m.id === id)?.maxOutputTokens;
    expect([limit('Org/Capped'), limit('Org/Context-Only'), limit('Org/Unbounded')]).toEqual([
      1024,
      4096,
      null,
    ]);
  });

  it("BILL-1 pricing shows each text model's batch price beside its price (issue 35)", async () => {
    const store = new CatalogueStore(h.redis);
    const base = {
      kind: 'chat' as const,
      pricing: { USD: { input: '1', output: '3' } },
      endpoints: [],
      created: 1,
    };
    await store.put({ ...base, id: 'Org/Batch-Half', batchDiscountPercent: 50 });
    await store.put({ ...base, id: 'Org/Batch-Full' });
    const s = await session(people.ann);
    const { models } = (await (await call(s, 'GET', '/pricing')).json()) as {
      models: { id: string; batchPrice: Record<string, string> | null }[];
    };
    const batch = (id: string) => models.find((m) => m.id === id)?.batchPrice;
    expect(batch('Org/Batch-Half')).toEqual({ input: '0.5', output: '1.5' });
    expect(batch('Org/Batch-Full')).toEqual({ input: '1', output: '3' });
  });
});
