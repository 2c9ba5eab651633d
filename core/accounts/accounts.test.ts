import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { ApiError } from '../errors.ts';
import { acknowledge, parseAnnouncement } from '../redis/announce.ts';
import { onMessage, type Redis, subscribe } from '../redis/client.ts';
import { Accounts } from './accounts.ts';

let server: TestRedis;
let redis: Redis;
let accounts: Accounts;
beforeAll(async () => {
  server = await startRedis();
  redis = server.client();
  accounts = new Accounts(redis);
});
afterAll(async () => server.stop());

async function apiError(promise: Promise<unknown>): Promise<ApiError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

describe('Accounts', () => {
  it('creates with a country and derives the currency', async () => {
    const a = await accounts.create({ name: 'Acme', country: 'de' });
    expect(a).toMatchObject({ name: 'Acme', country: 'DE', currency: 'EUR' });
    expect(a.id).toMatch(/^acct_[0-9a-f]{16}$/);
    expect(await accounts.get(a.id)).toEqual(a);
    const b = await accounts.create({ name: 'NoCountry', id: 'acct_fixed' });
    expect(b).toMatchObject({ id: 'acct_fixed', country: null, currency: null });
    expect((await accounts.list()).map((x) => x.id)).toEqual([a.id, b.id]);
    expect(await accounts.get('acct_nope')).toBeNull();
  });

  it('rejects an unknown country, a duplicate id and an empty name, naming the field', async () => {
    for (const country of ['XX', 'USA', '', 'u$']) {
      const err = await apiError(accounts.create({ name: 'x', country }));
      expect([err.code, err.param]).toEqual(['invalid_request', 'country']);
    }
    await accounts.create({ name: 'x', id: 'acct_dup' });
    expect((await apiError(accounts.create({ name: 'y', id: 'acct_dup' }))).param).toBe('id');
    expect((await apiError(accounts.create({ name: 'y', id: 'bad{tag}' }))).param).toBe('id');
    expect((await apiError(accounts.create({ name: '  ' }))).param).toBe('name');
  });

  it('sets and clears the country; leaves billing fields in the same hash alone', async () => {
    const a = await accounts.create({ name: 'Mover' });
    await redis.hset(`{a:${a.id}}:account`, 'balance', '42');
    expect(await accounts.setCountry(a.id, 'GB')).toMatchObject({ country: 'GB', currency: 'GBP' });
    await redis.hset(`{a:${a.id}}:account`, 'balance', '0');
    expect(await accounts.setCountry(a.id, null)).toMatchObject({ country: null, currency: null });
    await redis.hset(`{a:${a.id}}:account`, 'balance', '42');
    expect((await apiError(accounts.setCountry(a.id, 'ZZ'))).param).toBe('country');
    expect((await apiError(accounts.setCountry('acct_nope', 'US'))).code).toBe('not_found');
    expect(await redis.hget(`{a:${a.id}}:account`, 'balance')).toBe('42');
  });

  it('CON-13 refuses a currency change while the account holds credit or holds, allows same-currency moves', async () => {
    const a = await accounts.create({ name: 'Holder', country: 'DE' });
    await redis.hset(`{a:${a.id}}:account`, 'balance', '1000');
    expect(await accounts.setCountry(a.id, 'FR')).toMatchObject({ country: 'FR', currency: 'EUR' });
    for (const to of ['US', null]) {
      const err = await apiError(accounts.setCountry(a.id, to));
      expect([err.code, err.param]).toEqual(['invalid_request', 'country']);
      expect(err.message).toMatch(/holds credit in EUR/);
    }
    await redis.hset(`{a:${a.id}}:account`, 'balance', '0', 'held', '5');
    expect((await apiError(accounts.setCountry(a.id, 'US'))).param).toBe('country');
    await redis.hset(`{a:${a.id}}:account`, 'held', '0');
    expect(await accounts.setCountry(a.id, 'US')).toMatchObject({ currency: 'USD' });
  });

  it('announces currency and grant changes so proxies drop cached account views at once', async () => {
    const a = await accounts.create({ name: 'Announcer', country: 'US' });
    const sub = server.client();
    const seen: string[] = [];
    // Stands in for a proxy replica: each change returns only once it was applied and acknowledged.
    onMessage(sub, (_channel, message) => {
      const { nonce, payload } = parseAnnouncement(message);
      seen.push(payload);
      void acknowledge(redis, nonce);
    });
    await subscribe(sub, 'mp:accounts:changed');
    await accounts.grantModel(a.id, 'x/y');
    expect(seen).toEqual([a.id]);
    await accounts.revokeModel(a.id, 'x/y');
    await accounts.setCountry(a.id, 'CA');
    expect(seen).toEqual([a.id, a.id, a.id]);
    sub.disconnect();
  });

  it('grants invite-only models by lowercased id', async () => {
    const a = await accounts.create({ name: 'Grants', country: 'US' });
    await accounts.grantModel(a.id, 'Acme/Secret-Model');
    expect(await accounts.grants(a.id)).toEqual(new Set(['acme/secret-model']));
    await accounts.revokeModel(a.id, 'ACME/SECRET-MODEL');
    expect(await accounts.grants(a.id)).toEqual(new Set());
  });
});
