// The stored Responses against a real Redis: kept under the account (another's id is not found),
// bounded in size and in how many an account keeps (the oldest deleted by the script that adds
// the newest), and still saved after the server forgot its scripts (EVALSHA, then EVAL).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import type { Redis } from '../redis/client.ts';
import { ResponseStore, STORED_TTL_S } from './response-store.ts';

let server: TestRedis;
let redis: Redis;
beforeAll(async () => {
  server = await startRedis();
  redis = server.client();
});
afterAll(async () => server.stop());

const json = (id: string) => ({
  response: JSON.stringify({ id }),
  items: '[{"role":"user","content":"hi"}]',
});

describe('ResponseStore', () => {
  it("keeps one under its account for 30 days: another account's id is simply not found", async () => {
    const store = new ResponseStore(redis, { maxBytes: 10_000, perAccount: 10 });
    expect(await store.save('a1', 'resp_1', json('resp_1'))).toBe(true);
    expect(await store.get('a1', 'resp_1')).toEqual({
      response: { id: 'resp_1' },
      items: [{ role: 'user', content: 'hi' }],
    });
    expect(await store.get('a2', 'resp_1')).toBeNull();
    const ttl = await redis.ttl('responses:{a1}:resp_1');
    expect(ttl).toBeGreaterThan(STORED_TTL_S - 60);
    expect(await store.delete('a1', 'resp_1')).toBe(true);
    expect(await store.delete('a1', 'resp_1')).toBe(false);
    expect(await store.get('a1', 'resp_1')).toBeNull();
  });

  it('one over the size bound is not kept', async () => {
    const store = new ResponseStore(redis, { maxBytes: 50, perAccount: 10 });
    expect(await store.save('a3', 'resp_big', { response: `{"x":"${'y'.repeat(100)}"}`, items: '[]' })).toBe(
      false,
    );
    expect(await store.get('a3', 'resp_big')).toBeNull();
  });

  it('past the per-account bound the oldest go, in the script that adds the newest', async () => {
    const store = new ResponseStore(redis, { maxBytes: 10_000, perAccount: 2 });
    for (const id of ['r1', 'r2', 'r3']) {
      await store.save('a4', id, json(id));
      await new Promise((r) => setTimeout(r, 2)); // distinct scores (ms)
    }
    expect(await store.get('a4', 'r1')).toBeNull();
    expect(await store.get('a4', 'r2')).not.toBeNull();
    expect(await store.get('a4', 'r3')).not.toBeNull();
    expect(await redis.zrange('responses:{a4}:index', 0, -1)).toEqual(['r2', 'r3']);
  });

  it('saves after the server forgot its scripts (a restart, SCRIPT FLUSH)', async () => {
    const store = new ResponseStore(redis, { maxBytes: 10_000, perAccount: 10 });
    await store.save('a5', 'before', json('before'));
    await redis.script('FLUSH');
    expect(await store.save('a5', 'after', json('after'))).toBe(true);
    expect(await store.get('a5', 'after')).not.toBeNull();
  });

  it('a save is queued on the connection at once, even the first on a connection to a Redis without the script (a restart): a GET sent right after it reads it', async () => {
    // The route sends the response without waiting for the save; a client's GET that follows must
    // find it. Were the script sent as EVALSHA and, after NOSCRIPT, EVAL, the GET would run between.
    const fresh = server.client();
    await fresh.script('FLUSH');
    const store = new ResponseStore(fresh, { maxBytes: 10_000, perAccount: 10 });
    const saving = store.save('a6', 'first', json('first'));
    expect(await store.get('a6', 'first')).not.toBeNull();
    await saving;
    fresh.disconnect();
  });
});
