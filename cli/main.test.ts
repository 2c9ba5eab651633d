import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Metering } from '../core/billing/index.ts';
import { primaries, type Redis, whenReady } from '../core/redis/client.ts';
import { accountKeys } from '../core/redis/keyspace.ts';
import { startRedis, type TestRedis } from '../test/helpers/redis.ts';
import { createContext } from './context.ts';
import { main } from './main.ts';

/** Keys in Redis, on every primary (DBSIZE counts one node's). */
let counter: Redis | undefined;
async function keyCount(): Promise<number> {
  counter ??= redis.client();
  const r = counter;
  await whenReady(r);
  const sizes = await Promise.all(primaries(r).map((n) => n.dbsize()));
  return sizes.reduce((a, b) => a + b, 0);
}

let redis: TestRedis;
let out: string[];
let err: string[];

beforeAll(async () => {
  redis = await startRedis();
  process.env.REDIS_URL = redis.url;
  process.env.MODELPLANE_KEK = randomBytes(32).toString('hex');
});
afterAll(async () => redis.stop());
beforeEach(() => {
  out = [];
  err = [];
});

const io = { out: (s: string) => out.push(s), err: (s: string) => err.push(s) };
const run = (...argv: string[]) => main(argv, io, (json, o) => createContext(json, o));
const json = async (...argv: string[]) => {
  err = [];
  const code = await run(...argv, '--json');
  expect(err.join('\n')).toBe('');
  expect(code).toBe(0);
  return JSON.parse(out.pop()!);
};

describe('modelplane CLI', () => {
  it('creates an account with a country and credits, and shows its balance', async () => {
    const acct = await json('accounts', 'create', '--name', 'Acme', '--country', 'de', '--credits', '12.50');
    expect(acct).toMatchObject({
      name: 'Acme',
      country: 'DE',
      currency: 'EUR',
      balance: '12.5',
      available: '12.5',
    });
    const shown = await json('accounts', 'show', acct.id);
    expect(shown.balance).toBe('12.5');
    const granted = await json('credits', 'grant', acct.id, '0.000000001');
    expect(granted.balance).toBe('12.500000001');
  });

  it('accounts create --credits 0 makes an account with nothing on it; a negative amount is refused', async () => {
    const acct = await json('accounts', 'create', '--name', 'Zero', '--country', 'US', '--credits', '0');
    expect(acct).toMatchObject({ name: 'Zero', balance: '0' });
    err = [];
    expect(await run('accounts', 'create', '--name', 'Neg', '--credits', '-1')).not.toBe(0);
    expect(err.join('\n')).toMatch(/--credits/);
  });

  it('KEY-1 KEY-5 KEY-6 manages keys: create shows the secret once, list masks, rotate keeps the id, delete is final', async () => {
    const acct = await json('accounts', 'create', '--name', 'Keys Inc', '--country', 'US');
    const created = await json('keys', 'create', acct.id, '--name', 'ci');
    expect(created.secret).toMatch(/^sk-service-[0-9a-f]{48}$/);
    const listed = await json('keys', 'list', acct.id);
    expect(JSON.stringify(listed)).not.toContain(created.secret);
    expect(listed[0].last4).toBe(created.secret.slice(-4));
    const rotated = await json('keys', 'rotate', acct.id, created.id);
    expect(rotated.id).toBe(created.id);
    expect(rotated.secret).not.toBe(created.secret);
    expect((await json('keys', 'show', acct.id, created.id)).secret).toBe(rotated.secret);
    await json('keys', 'delete', acct.id, created.id);
    expect(await run('keys', 'show', acct.id, created.id)).toBe(2);
    expect(await json('keys', 'list', acct.id)).toEqual([]);
    expect(await json('keys', 'list', acct.id, '--all')).toHaveLength(1);
  });

  it("keys rate-limits sets and unsets a key's rate limits and the account's defaults", async () => {
    const acct = await json('accounts', 'create', '--name', 'Limited', '--country', 'US');
    const created = await json('keys', 'create', acct.id, '--name', 'tool');
    expect(
      await json('keys', 'rate-limits', acct.id, created.id, '--rpm', '60', '--concurrent', '2'),
    ).toMatchObject({
      rateLimits: { requestsPerMinute: 60, concurrentCalls: 2, inputTokensPerMinute: null },
    });
    expect(await json('keys', 'rate-limits', acct.id, created.id, '--rpm', 'none')).toMatchObject({
      rateLimits: { requestsPerMinute: null, concurrentCalls: 2 },
    });
    expect(await json('keys', 'rate-limits', acct.id, '--otpm', '1000')).toMatchObject({
      outputTokensPerMinute: 1000,
    });
    expect(await redis.client().hget(accountKeys(acct.id).account, 'lim:otpm')).toBe('1000');
    expect(await run('keys', 'rate-limits', acct.id, created.id, '--rpm', 'lots')).toBe(2);
    expect(await run('keys', 'rate-limits', acct.id, created.id, '--rpm', '0')).toBe(2);
  });

  it('keys concurrency-queue opts an account in and out of waiting for a slot; a wait out of range is refused', async () => {
    const acct = await json('accounts', 'create', '--name', 'Queued', '--country', 'US');
    expect(await json('keys', 'concurrency-queue', acct.id, '10')).toEqual({ concurrencyQueueSeconds: 10 });
    expect(await redis.client().hget(accountKeys(acct.id).account, 'concQueueS')).toBe('10');
    expect(await run('keys', 'concurrency-queue', acct.id, '61')).toBe(2);
    expect(await run('keys', 'concurrency-queue', acct.id, 'soon')).toBe(2);
    expect(await json('keys', 'concurrency-queue', acct.id, 'none')).toEqual({
      concurrencyQueueSeconds: null,
    });
    expect(await redis.client().hget(accountKeys(acct.id).account, 'concQueueS')).toBeNull();
  });

  it("keys budget sets, changes and removes the account's budget across its keys; what its keys spent counts", async () => {
    const acct = await json('accounts', 'create', '--name', 'Budgeted', '--country', 'US', '--credits', '10');
    const created = await json('keys', 'create', acct.id, '--name', 'tool');
    const m = new Metering(redis.client());
    await m.reserve({ accountId: acct.id, holdId: 'req_b', min: 1, max: 1_000_000_000, ttlMs: 60_000 });
    await m.settle({
      accountId: acct.id,
      holdId: 'req_b',
      cost: 750_000_000,
      usage: { keyId: created.id, model: 'M', kind: 'chat' },
    });
    expect(await json('keys', 'budget', acct.id, '3', '--window', 'week')).toEqual({
      budget: '3',
      window: 'week',
      windowSpend: '0.75',
    });
    expect(await redis.client().hmget(accountKeys(acct.id).account, 'budget', 'budgetWindow')).toEqual([
      '3000000000',
      'week',
    ]);
    // The window stays when only the amount changes.
    expect(await json('keys', 'budget', acct.id, '4')).toMatchObject({ budget: '4', window: 'week' });
    expect(await run('keys', 'budget', acct.id, '4', '--window', 'fortnight')).toBe(2);
    expect(await json('keys', 'budget', acct.id, 'none')).toMatchObject({ budget: null, window: null });
    expect(await run('keys', 'budget', 'acct_nope', '1')).toBe(2);
  });

  it("keys create --spend-limit and keys limit set, change and remove a key's monthly spend limit", async () => {
    const acct = await json('accounts', 'create', '--name', 'Capped', '--country', 'US', '--credits', '10');
    const created = await json('keys', 'create', acct.id, '--name', 'tool', '--spend-limit', '5');
    expect(created.spendLimit).toBe('5');
    // This month's spend so far counts toward a limit set later, and the listing shows both.
    const m = new Metering(redis.client());
    await m.reserve({ accountId: acct.id, holdId: 'req_1', min: 1, max: 1_500_000_000, ttlMs: 60_000 });
    await m.settle({
      accountId: acct.id,
      holdId: 'req_1',
      cost: 1_250_000_000,
      usage: { keyId: created.id, model: 'M', kind: 'chat' },
    });
    expect(await json('keys', 'list', acct.id)).toEqual([
      expect.objectContaining({ id: created.id, spendLimit: '5', monthSpend: '1.25' }),
    ]);
    expect(await json('keys', 'limit', acct.id, created.id, '2.5')).toMatchObject({
      spendLimit: '2.5',
      monthSpend: '1.25',
    });
    expect(await redis.client().hget(accountKeys(acct.id).key(created.id), 'spendLimit')).toBe('2500000000');
    // A window (issue 34): the key's spend today is what its daily limit counts.
    expect(await json('keys', 'limit', acct.id, created.id, '2', '--window', 'day')).toMatchObject({
      spendLimit: '2',
      spendWindow: 'day',
      windowSpend: '1.25',
    });
    expect(await run('keys', 'limit', acct.id, created.id, '2', '--window', 'fortnight')).toBe(2);
    expect(err.join('\n')).toMatch(/--window must be one of day, week, month/);
    expect(await json('keys', 'limit', acct.id, created.id, 'none')).toMatchObject({ spendLimit: null });
    expect(await run('keys', 'limit', acct.id, created.id, 'lots')).toBe(2);
    expect(err.join('\n')).toMatch(/<amount\|none>/);
    expect(await run('keys', 'limit', acct.id, 'key_nope', '1')).toBe(2);
    expect(await run('keys', 'create', acct.id, '--name', 'x', '--spend-limit', '1.0000000001')).toBe(2);
    expect(err.join('\n')).toMatch(/--spend-limit/);
  });

  it('grants an invite-only model and creates a console user bound to the account', async () => {
    const acct = await json('accounts', 'create', '--name', 'Grants', '--country', 'GB');
    expect(await json('models', 'grant', acct.id, 'Org/Secret-Model')).toMatchObject({ granted: true });
    const user = await json(
      'users',
      'create',
      '--email',
      'Ops@Example.com',
      '--account',
      acct.id,
      '--password',
      'correct horse',
    );
    expect(user).toMatchObject({ email: 'ops@example.com', accountId: acct.id });
  });

  it('models grant and revoke by an alias act on the model it names; a name the catalogue does not know is kept as given, and says so', async () => {
    const ctx = createContext(true, () => {});
    await ctx.catalogue.put({
      id: 'Org/Aliased-Secret',
      kind: 'chat',
      availability: 'inviteOnly',
      pricing: { USD: { input: '1', output: '1' } },
      aliases: ['codex-default-name', 'haiku-*'],
      created: 1_700_000_000,
    });
    const acct = await json('accounts', 'create', '--name', 'Aliases', '--country', 'US');
    expect(await json('models', 'grant', acct.id, 'CODEX-default-name')).toMatchObject({
      modelId: 'Org/Aliased-Secret',
      granted: true,
    });
    expect(await ctx.accounts.grants(acct.id)).toEqual(new Set(['org/aliased-secret']));
    expect(await json('models', 'revoke', acct.id, 'haiku-4-5')).toMatchObject({
      modelId: 'Org/Aliased-Secret',
      granted: false,
    });
    expect(await ctx.accounts.grants(acct.id)).toEqual(new Set());
    expect(await run('models', 'grant', acct.id, 'codex-default-name')).toBe(0);
    expect(out.pop()).toBe(
      `granted Org/Aliased-Secret to ${acct.id} (the model the alias codex-default-name names)`,
    );
    expect(await run('models', 'grant', acct.id, 'Org/Not-Yet-Applied')).toBe(0);
    expect(out.pop()).toMatch(/granted Org\/Not-Yet-Applied .*not in the catalogue: kept as that id/);
    await ctx.close();
  });

  it('credits grant --id credits once however often it is re-run (a lost reply)', async () => {
    const acct = await json('accounts', 'create', '--name', 'Grant Once', '--country', 'US');
    expect(await json('credits', 'grant', acct.id, '5', '--id', 'invoice-42')).toMatchObject({
      balance: '5',
      duplicate: false,
    });
    expect(await json('credits', 'grant', acct.id, '5', '--id', 'invoice-42')).toMatchObject({
      balance: '5',
      duplicate: true,
    });
    expect(await run('credits', 'grant', acct.id, '5', '--id', 'invoice-42')).toBe(0);
    expect(out.pop()).toMatch(/^grant 'invoice-42' was applied before; nothing was credited now\n/);
  });

  it('ledger check passes on a clean ledger and exits 1 naming each difference; ledger show prints a call', async () => {
    const acct = await json('accounts', 'create', '--name', 'Ledger', '--country', 'US', '--credits', '1');
    const metering = new Metering(redis.client());
    await metering.reserve({ accountId: acct.id, holdId: 'req_cli', min: 10, max: 1_000, ttlMs: 60_000 });
    await metering.settle({
      accountId: acct.id,
      holdId: 'req_cli',
      cost: 400,
      usage: {
        keyId: 'key_1',
        model: 'Org/M',
        kind: 'chat',
        inputTokens: 4,
        outputTokens: 1,
        requestId: 'req_cli',
      },
    });
    const [ledger] = await json('ledger', 'check', '--account', acct.id);
    expect(ledger).toMatchObject({ accountId: acct.id, problems: [], entries: 2 });
    expect(await run('ledger', 'show', 'req_cli', '--account', acct.id)).toBe(0);
    expect(out.pop()).toMatch(
      /req_cli {2}account acct_\w+\n {2}hold {4}0\.000001 {2}reserved\n {2}settle {2}0\.0000004 of cost 0\.0000004 /,
    );
    await redis.client().hincrby(accountKeys(acct.id).account, 'balance', 7);
    expect(await run('ledger', 'check', '--account', acct.id)).toBe(1);
    expect(err.join('\n')).toMatch(
      /balance is 999999607, but top-ups − charges \+ refunds in the usage stream are 999999600/,
    );
    expect(await run('ledger', 'show', 'req_none', '--account', acct.id)).toBe(2);
  });

  it('reports usage for an account (empty before any call)', async () => {
    const acct = await json('accounts', 'create', '--name', 'Usage', '--country', 'US');
    expect(await json('usage', acct.id, '--hours', '2')).toEqual([]);
  });

  it.each([
    [['accounts', 'create'], /missing --name/],
    [['accounts', 'create', '--name', 'X', '--country', 'ZZ'], /unknown country 'ZZ'/],
    [['accounts', 'create', '--name', 'X', '--credits', '-5'], /--credits/],
    [['accounts', 'create', '--name', 'X', '--credits', '1.0000000001'], /at most 9 decimals/],
    [['accounts', 'create', '--name', 'X', '--bogus'], /Unknown option '--bogus'/],
    [['credits', 'grant', 'acct_nope', '5'], /no account 'acct_nope'/],
    [['keys', 'create', 'acct_nope', '--name', 'k'], /no account/],
    [['usage', 'acct_x', '--hours', 'lots'], /--hours/],
    [['credits', 'grant', 'acct_x', '5', '--id', 'has space'], /--id/],
    [['ledger', 'check', '--tolerance-ms', 'soon'], /--tolerance-ms/],
    [['ledger', 'show'], /missing <requestId>/],
    [['nonsense'], /unknown command/],
  ])('bad arguments %j exit 2 with a clear message and write nothing', async (argv, message) => {
    const before = await keyCount();
    expect(await run(...argv)).toBe(2);
    expect(err.join('\n')).toMatch(message);
    expect(await keyCount()).toBe(before);
  });

  it('KEY-2 a duplicate key name is refused with exit 2', async () => {
    const acct = await json('accounts', 'create', '--name', 'Dup', '--country', 'US');
    await json('keys', 'create', acct.id, '--name', 'same');
    expect(await run('keys', 'create', acct.id, '--name', 'same')).toBe(2);
    expect(err.join('\n')).toMatch(/name/i);
  });
});
