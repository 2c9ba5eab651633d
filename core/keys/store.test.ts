import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { NO_RATE_LIMITS } from '../billing/rate-limits.ts';
import { ApiError } from '../errors.ts';
import { newId } from '../ids.ts';
import { acknowledge, parseAnnouncement } from '../redis/announce.ts';
import { onMessage, primaries, type Redis, scanKeys, subscribe } from '../redis/client.ts';
import { accountKeys, channels, globalKeys } from '../redis/keyspace.ts';
import { hashSecret, maskSecret } from './secret.ts';
import { ApiKeys } from './store.ts';

const CURRENT = /^sk-service-[0-9a-f]{48}$/;
const LEGACY = 'sk-abc123def456ghi789jkl012';

let server: TestRedis;
let redis: Redis;
let keys: ApiKeys;
let sub: Redis;
const published: string[] = [];
/** Hashes published on keyChanged (a live key's settings changed). */
const changed: string[] = [];

beforeAll(async () => {
  server = await startRedis();
  redis = server.client();
  keys = new ApiKeys(redis, { brand: 'service', kek: randomBytes(32) });
  sub = server.client();
  // Stands in for a proxy replica: records what it was told and acknowledges it (core/redis/announce.ts).
  onMessage(sub, (channel, message) => {
    const { nonce, payload } = parseAnnouncement(message);
    if (channel === channels.keyInvalidated) published.push(payload);
    else if (channel === channels.keyChanged) changed.push(payload);
    void acknowledge(redis, nonce);
  });
  await subscribe(sub, channels.keyInvalidated, channels.keyChanged);
});
afterAll(async () => {
  await sub.unsubscribe();
  await server.stop();
});

const account = () => newId('acct');

async function rejects(promise: Promise<unknown>, code: string, param?: string): Promise<ApiError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).code).toBe(code);
  if (param !== undefined) expect((err as ApiError).param).toBe(param);
  return err as ApiError;
}

describe('ApiKeys', () => {
  it('KEY-1 create returns a current-format secret that authenticates', async () => {
    const a = account();
    const { key, secret } = await keys.create(a, { name: 'ci', createdBy: 'user_1' });
    expect(secret).toMatch(CURRENT);
    expect(key).toMatchObject({
      accountId: a,
      name: 'ci',
      createdBy: 'user_1',
      status: 'active',
      format: 'current',
    });
    expect(key.last4).toBe(secret.slice(-4));
    expect(await keys.authenticate(secret)).toEqual({
      accountId: a,
      keyId: key.id,
      secretHash: hashSecret(secret),
      spendLimit: null,
      rateLimits: NO_RATE_LIMITS,
    });
    expect(await redis.get(globalKeys.keyByHash(hashSecret(secret)))).toBe(`${a}:${key.id}`);
  });

  it('KEY-2 a name is 1..100 characters', async () => {
    const a = account();
    await keys.create(a, { name: 'x'.repeat(100) });
    await keys.create(a, { name: '🔑'.repeat(100) });
    const err = await rejects(keys.create(a, { name: 'x'.repeat(101) }), 'invalid_request', 'name');
    expect(err.message).toMatch(/at most 100 characters/);
    await rejects(keys.create(a, { name: '' }), 'invalid_request', 'name');
    await rejects(keys.create(a, { name: ' padded ' }), 'invalid_request', 'name');
    await rejects(keys.create(a, { name: 'line\nbreak' }), 'invalid_request', 'name');
  });

  it('KEY-2 a name is unique among active keys, case-insensitively; a deleted key frees it', async () => {
    const a = account();
    const first = await keys.create(a, { name: 'Prod' });
    const err = await rejects(keys.create(a, { name: 'prod' }), 'invalid_request', 'name');
    expect(err.message).toBe('Another key of this account is already named “prod”: choose another name.');
    expect(await keys.create(account(), { name: 'Prod' })).toBeTruthy(); // other account: no clash
    await keys.delete(a, first.key.id);
    const again = await keys.create(a, { name: 'PROD' });
    expect(again.key.name).toBe('PROD');
    const all = await keys.list(a, { includeDeleted: true });
    expect(all.map((k) => [k.name, k.status])).toEqual([
      ['Prod', 'deleted'],
      ['PROD', 'active'],
    ]);
  });

  it('KEY-2 a key is renamed under the same rules (issue 48 item 10): unique among active keys, its old name freed, its secret kept', async () => {
    const a = account();
    const { key, secret } = await keys.create(a, { name: 'old' });
    await keys.create(a, { name: 'Taken' });
    const renamed = await keys.rename(a, key.id, 'new');
    expect(renamed).toMatchObject({ id: key.id, name: 'new', last4: key.last4 });
    expect((await keys.authenticate(secret))?.keyId).toBe(key.id);
    const err = await rejects(keys.rename(a, key.id, 'taken'), 'invalid_request', 'name');
    expect(err.message).toMatch(/already named “taken”/);
    await rejects(keys.rename(a, key.id, ' padded '), 'invalid_request', 'name');
    expect((await keys.rename(a, key.id, 'NEW')).name).toBe('NEW'); // its own name in another case
    expect((await keys.create(a, { name: 'old' })).key.name).toBe('old'); // the old name is free
    await rejects(keys.create(a, { name: 'new' }), 'invalid_request', 'name');
    await rejects(keys.rename(account(), key.id, 'x'), 'not_found'); // another account's id
    await keys.delete(a, key.id);
    await rejects(keys.rename(a, key.id, 'after'), 'not_found');
    expect((await keys.create(a, { name: 'new' })).key.name).toBe('new'); // a deleted key's name is free
  });

  it('KEY-2 concurrent creates with one name: exactly one wins, no stray lookup entries', async () => {
    const a = account();
    const before = (await scanKeys(redis, 'mp:keyhash:*')).length;
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, () => keys.create(a, { name: 'race' })),
    );
    const won = results.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect((r.reason as ApiError).param).toBe('name');
    expect(await keys.list(a)).toHaveLength(1);
    expect((await scanKeys(redis, 'mp:keyhash:*')).length).toBe(before + 1);
  });

  it('KEY-3 ensureDefaultKey mints Default once, even under concurrent calls', async () => {
    const a = account();
    const results = await Promise.all(Array.from({ length: 10 }, () => keys.ensureDefaultKey(a)));
    const minted = results.filter((r) => r !== null);
    expect(minted).toHaveLength(1);
    expect(minted[0]!.key.name).toBe('Default');
    expect(minted[0]!.secret).toMatch(CURRENT);
    expect(await keys.authenticate(minted[0]!.secret)).not.toBeNull();
    expect(await keys.ensureDefaultKey(a)).toBeNull();
    expect(await keys.list(a)).toHaveLength(1);
  });

  it('KEY-3 an account that had keys, all deleted, gets no new Default', async () => {
    const a = account();
    const { key } = await keys.create(a, { name: 'only' });
    await keys.delete(a, key.id);
    expect(await keys.ensureDefaultKey(a)).toBeNull();
    expect(await keys.list(a)).toHaveLength(0);
    const b = account();
    await keys.importLegacy(b, { name: 'old', secret: `${LEGACY}-b` });
    expect(await keys.ensureDefaultKey(b)).toBeNull();
  });

  it('KEY-4 show returns the full secret; the listing carries only the last four', async () => {
    const a = account();
    const { key, secret } = await keys.create(a, { name: 'shown' });
    expect(await keys.show(a, key.id)).toBe(secret);
    const [listed] = await keys.list(a);
    expect(listed).toEqual(key);
    expect(JSON.stringify(listed)).not.toContain(secret);
    expect(maskSecret(listed!.last4)).toBe(`sk-...${secret.slice(-4)}`);
    await rejects(keys.show(a, 'key_missing'), 'not_found');
    await rejects(keys.show(account(), key.id), 'not_found'); // another account's id
  });

  it('KEY-5 rotation keeps id, name, createdAt; the old secret fails at once; invalidation published', async () => {
    const a = account();
    const { key, secret: old } = await keys.create(a, { name: 'rotating', createdBy: 'user_r' });
    const rotated = await keys.rotate(a, key.id);
    expect(rotated.secret).toMatch(CURRENT);
    expect(rotated.secret).not.toBe(old);
    expect(rotated.key).toMatchObject({
      id: key.id,
      name: key.name,
      createdAt: key.createdAt,
      createdBy: 'user_r',
    });
    expect(rotated.key.rotatedAt).not.toBeNull();
    expect(rotated.key.last4).toBe(rotated.secret.slice(-4));
    expect(await keys.authenticate(old)).toBeNull();
    expect(await redis.exists(globalKeys.keyByHash(hashSecret(old)))).toBe(0);
    expect(await keys.authenticate(rotated.secret)).toMatchObject({ accountId: a, keyId: key.id });
    expect(await keys.show(a, key.id)).toBe(rotated.secret);
    expect(published).toContain(hashSecret(old)); // delivered before rotate returned
    expect(published).not.toContain(old);
  });

  it('KEY-5 the old secret fails as soon as the record changes, even if its lookup entry lingers', async () => {
    const a = account();
    const { key, secret: old } = await keys.create(a, { name: 'crash' });
    const ref = `${a}:${key.id}`;
    await keys.rotate(a, key.id);
    // Simulate a crash between the record script and the lookup cleanup.
    await redis.set(globalKeys.keyByHash(hashSecret(old)), ref);
    expect(await keys.authenticate(old)).toBeNull();
  });

  it('KEY-6 a deleted key never authenticates, cannot be shown, rotated or brought back', async () => {
    const a = account();
    const { key, secret } = await keys.create(a, { name: 'doomed' });
    await keys.delete(a, key.id);
    expect(await keys.authenticate(secret)).toBeNull();
    expect(published).toContain(hashSecret(secret));
    await rejects(keys.show(a, key.id), 'not_found');
    await rejects(keys.rotate(a, key.id), 'not_found');
    await keys.delete(a, key.id); // idempotent
    await rejects(keys.delete(a, 'key_missing'), 'not_found');
    const rec = await keys.get(a, key.id);
    expect(rec).toMatchObject({ status: 'deleted', name: 'doomed' });
    expect(rec!.deletedAt).not.toBeNull();
    expect(await redis.hget(accountKeys(a).key(key.id), 'sealed')).toBeNull();
    expect(await keys.list(a)).toHaveLength(0);
    await rejects(keys.importLegacy(account(), { name: 'revive', secret }), 'invalid_request', 'secret');
  });

  it('a key carries an optional monthly spend limit, set at creation or later, on its record and its authentication', async () => {
    const a = account();
    const { key, secret } = await keys.create(a, { name: 'capped', spendLimit: 5_000_000_000 });
    expect(key.spendLimit).toBe(5_000_000_000);
    const { key: plain } = await keys.create(a, { name: 'plain' });
    expect(plain.spendLimit).toBeNull();
    // Sorted by name: the two may share a createdAt millisecond, and the listing breaks ties by id.
    const listed = (await keys.list(a)).map((k) => [k.name, k.spendLimit]).sort();
    expect(listed).toEqual([
      ['capped', 5_000_000_000],
      ['plain', null],
    ]);
    expect(await keys.authenticate(secret)).toMatchObject({ keyId: key.id, spendLimit: 5_000_000_000 });

    const raised = await keys.setSpendLimit(a, key.id, 7_500_000_000);
    expect(raised).toMatchObject({ id: key.id, spendLimit: 7_500_000_000 });
    expect(await keys.get(a, key.id)).toEqual(raised);
    expect(await keys.authenticate(secret)).toMatchObject({ spendLimit: 7_500_000_000 });
    // Proxies are told on their own channel: the key still works, so nothing is invalidated.
    expect(changed).toContain(hashSecret(secret));
    expect(published).not.toContain(hashSecret(secret));
    expect((await keys.setSpendLimit(a, key.id, 0)).spendLimit).toBe(0);
    expect((await keys.setSpendLimit(a, key.id, null)).spendLimit).toBeNull();
    expect(await redis.hexists(accountKeys(a).key(key.id), 'spendLimit')).toBe(0);
    // Rotation keeps the limit (same key, new secret).
    await keys.setSpendLimit(a, key.id, 1_000);
    expect((await keys.rotate(a, key.id)).key.spendLimit).toBe(1_000);
  });

  it('a spend limit must be null or a non-negative whole number of nano below 2^53 (400 naming spendLimit); only active keys have one', async () => {
    const a = account();
    const { key } = await keys.create(a, { name: 'k' });
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '5' as unknown as number]) {
      await rejects(keys.setSpendLimit(a, key.id, bad), 'invalid_request', 'spendLimit');
      await rejects(
        keys.create(a, { name: `bad ${String(bad)}`, spendLimit: bad }),
        'invalid_request',
        'spendLimit',
      );
    }
    expect((await keys.list(a)).map((k) => k.name)).toEqual(['k']);
    expect((await keys.get(a, key.id))!.spendLimit).toBeNull();
    await rejects(keys.setSpendLimit(a, 'key_missing', 5), 'not_found');
    await rejects(keys.setSpendLimit(account(), key.id, 5), 'not_found'); // another account's id
    await keys.delete(a, key.id);
    await rejects(keys.setSpendLimit(a, key.id, 5), 'not_found');
  });

  it('KEY-8 an account holds 500 keys', async () => {
    const a = account();
    const created = [];
    for (let i = 0; i < 500; i += 50) {
      created.push(
        ...(await Promise.all(Array.from({ length: 50 }, (_, j) => keys.create(a, { name: `k${i + j}` })))),
      );
    }
    const listed = await keys.list(a);
    expect(listed).toHaveLength(500);
    expect(new Set(listed.map((k) => k.id)).size).toBe(500);
    for (const c of [created[0]!, created[250]!, created[499]!]) {
      expect(await keys.authenticate(c.secret)).toMatchObject({ keyId: c.key.id });
    }
  });

  it('KEY-9 legacy keys authenticate; rotation moves them to the current format', async () => {
    const a = account();
    const key = await keys.importLegacy(a, { name: 'from-gateway', secret: LEGACY, createdBy: 'user_l' });
    expect(key).toMatchObject({ format: 'legacy', last4: LEGACY.slice(-4), createdBy: 'user_l' });
    expect(await keys.authenticate(LEGACY)).toMatchObject({ accountId: a, keyId: key.id });
    expect(await keys.show(a, key.id)).toBe(LEGACY);
    await rejects(keys.importLegacy(account(), { name: 'dup', secret: LEGACY }), 'invalid_request', 'secret');
    await rejects(keys.importLegacy(a, { name: 'bad', secret: ` ${LEGACY}` }), 'invalid_request', 'secret');
    await rejects(keys.importLegacy(a, { name: 'short', secret: 'sk-short' }), 'invalid_request', 'secret');
    const rotated = await keys.rotate(a, key.id);
    expect(rotated.key.format).toBe('current');
    expect(rotated.secret).toMatch(CURRENT);
    expect(await keys.authenticate(LEGACY)).toBeNull();
    expect(await keys.authenticate(rotated.secret)).toMatchObject({ keyId: key.id });
  });

  it('AUTH-5 whitespace is rejected, never trimmed, without touching Redis', async () => {
    const { secret } = await keys.create(account(), { name: 'ws' });
    const variants = [
      ` ${secret}`,
      `${secret} `,
      `${secret}\n`,
      `${secret}\r\n`,
      `\t${secret}`,
      `${secret}\t`,
    ];
    // Every primary's count (a cluster spreads the keys); each counts the INFO that read it.
    const processed = async () =>
      (await Promise.all(primaries(redis).map((n) => n.info('stats'))))
        .map((s) => Number(s.match(/total_commands_processed:(\d+)/)![1]))
        .reduce((a, b) => a + b, 0);
    const before = await processed();
    for (const v of variants) expect(await keys.authenticate(v)).toBeNull();
    for (const v of ['', 'short', 'x'.repeat(257), `${secret.slice(0, -1)}é`]) {
      expect(await keys.authenticate(v)).toBeNull();
    }
    const after = await processed();
    expect(after - before).toBe(primaries(redis).length); // the first INFOs themselves
    expect(await keys.authenticate(secret)).not.toBeNull();
    const otherLast = secret.endsWith('0') ? '1' : '0';
    expect(await keys.authenticate(`${secret.slice(0, -1)}${otherLast}`)).toBeNull();
  });
});
