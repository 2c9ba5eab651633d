import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { ApiError } from '../errors.ts';
import type { Redis } from '../redis/client.ts';
import { globalKeys } from '../redis/keyspace.ts';
import { Users } from './users.ts';

let server: TestRedis;
let redis: Redis;
let users: Users;
beforeAll(async () => {
  server = await startRedis();
  redis = server.client();
  users = new Users(redis);
});
afterAll(async () => server.stop());

async function param(promise: Promise<unknown>): Promise<string | null> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).code).toBe('invalid_request');
  return (err as ApiError).param;
}

describe('Users', () => {
  it('creates with a normalized email and verifies the password', async () => {
    const u = await users.create({
      email: '  Ada@Example.COM ',
      password: 'hunter2hunter2',
      accountId: 'acct_1',
    });
    expect(u).toMatchObject({ email: 'ada@example.com', accountId: 'acct_1' });
    expect(u.id).toMatch(/^user_[0-9a-f]{16}$/);
    expect(await users.get(u.id)).toEqual(u);
    expect(await users.verify('ADA@example.com', 'hunter2hunter2')).toEqual(u);
    expect(await users.verify('ada@example.com', 'hunter2hunter3')).toBeNull();
    expect(await users.verify('ada@example.com', 'hunter2hunter2 ')).toBeNull();
    expect(await users.verify('nobody@example.com', 'hunter2hunter2')).toBeNull();
    const stored = await redis.hgetall(globalKeys.user(u.id));
    expect(stored.passwordHash).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(JSON.stringify(stored)).not.toContain('hunter2');
  });

  it('rejects a duplicate email (any case), even under concurrent sign-ups', async () => {
    await users.create({ email: 'dup@example.com', password: 'password1', accountId: 'acct_1' });
    expect(
      await param(users.create({ email: 'DUP@example.com', password: 'password2', accountId: 'acct_2' })),
    ).toBe('email');
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, () =>
        users.create({ email: 'race@example.com', password: 'password1', accountId: 'a' }),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });

  it('rejects a short password and a malformed email', async () => {
    expect(await param(users.create({ email: 'x@example.com', password: '1234567', accountId: 'a' }))).toBe(
      'password',
    );
    expect(await param(users.create({ email: 'not-an-email', password: 'password1', accountId: 'a' }))).toBe(
      'email',
    );
    expect(await users.get('user_missing')).toBeNull();
  });
});
