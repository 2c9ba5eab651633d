// The console's call facts on a real Redis: a call's facts read back by request id and expiring;
// refusals newest first by time range and key, and a flood of them kept to a bounded list.
import { beforeAll, describe, expect, it } from 'vitest';
import { redisForFile } from '../../test/helpers/redis-per-file.ts';
import { accountKeys } from '../redis/keyspace.ts';
import {
  callFacts,
  FACT_TTL_MS,
  keysLastUsed,
  REFUSED_KEPT,
  recordCallFact,
  recordRefused,
  refusedCalls,
} from './call-facts.ts';

const r = redisForFile();
/** Facts are written only for an account Redis holds (its hash exists). */
const account = (id: string) => r.redis.hset(accountKeys(id).account, 'name', id);

beforeAll(async () => {
  for (const id of ['acf1', 'acf2', 'arf']) await account(id);
});

describe('call facts', () => {
  it("a call's facts by request id, expiring; an unknown id is absent", async () => {
    await recordCallFact(
      r.redis,
      'acf1',
      { requestId: 'req_a', keyId: 'k1' },
      {
        status: 200,
        latencyMs: 812,
        ttftMs: 95,
        finishReason: 'stop',
      },
    );
    await recordCallFact(
      r.redis,
      'acf1',
      { requestId: 'req_b', keyId: 'k2' },
      {
        status: 499,
        latencyMs: 40,
        ttftMs: null,
        finishReason: null,
      },
    );
    const got = await callFacts(r.redis, 'acf1', ['req_a', 'req_b', 'req_none', 'req_a']);
    expect(Object.fromEntries(got)).toEqual({
      req_a: { status: 200, latencyMs: 812, ttftMs: 95, finishReason: 'stop' },
      req_b: { status: 499, latencyMs: 40, ttftMs: null, finishReason: null },
    });
    const ttl = await r.redis.pttl(accountKeys('acf1').callFact('req_a'));
    expect(ttl).toBeGreaterThan(FACT_TTL_MS - 60_000);
    expect(ttl).toBeLessThanOrEqual(FACT_TTL_MS);
    // Each key's last use, for the key table.
    expect([...(await keysLastUsed(r.redis, 'acf1')).keys()].sort()).toEqual(['k1', 'k2']);
    expect(Math.abs((await keysLastUsed(r.redis, 'acf1')).get('k1')! - Date.now())).toBeLessThan(60_000);
    // Another account's facts are not this one's.
    expect((await callFacts(r.redis, 'acf2', ['req_a'])).size).toBe(0);
    expect((await callFacts(r.redis, 'acf1', [])).size).toBe(0);
  });

  it('refusals: newest first, by range and key; a flood keeps a bounded list that expires', async () => {
    const base = {
      status: 400,
      code: 'invalid_request',
      latencyMs: 3,
      model: 'Org/M',
      route: '/v1/chat/completions',
    };
    await recordRefused(r.redis, 'arf', { ...base, requestId: 'req_1', keyId: 'k1' });
    await recordRefused(r.redis, 'arf', {
      ...base,
      requestId: 'req_2',
      keyId: 'k2',
      status: 429,
      code: 'insufficient_quota',
    });
    await recordRefused(r.redis, 'arf', { ...base, requestId: 'req_3', keyId: 'k1', model: null });
    const now = Date.now();
    const all = await refusedCalls(r.redis, 'arf', { fromMs: now - 60_000, toMs: now + 60_000, limit: 10 });
    expect(all.map((c) => c.requestId)).toEqual(['req_3', 'req_2', 'req_1']);
    expect(all[1]).toMatchObject({ status: 429, code: 'insufficient_quota', keyId: 'k2', model: 'Org/M' });
    expect(all[0]!.model).toBeNull();
    expect(Math.abs(all[0]!.atMs - now)).toBeLessThan(60_000);
    const k1 = await refusedCalls(r.redis, 'arf', {
      fromMs: now - 60_000,
      toMs: now + 60_000,
      keyId: 'k1',
      limit: 1,
    });
    expect(k1.map((c) => c.requestId)).toEqual(['req_3']);
    expect(await refusedCalls(r.redis, 'arf', { fromMs: 0, toMs: all[2]!.atMs, limit: 10 })).toEqual([]);

    // A flood: storage stays about REFUSED_KEPT (trimmed in whole stream nodes of 100), newest kept.
    for (let i = 0; i < 3 * REFUSED_KEPT; i += 500) {
      await Promise.all(
        Array.from({ length: 500 }, (_, j) =>
          recordRefused(r.redis, 'arf', { ...base, requestId: `req_f${i + j}`, keyId: 'k1' }),
        ),
      );
    }
    const kept = await r.redis.xlen(accountKeys('arf').refused);
    expect(kept).toBeGreaterThanOrEqual(REFUSED_KEPT);
    expect(kept).toBeLessThanOrEqual(REFUSED_KEPT + 100);
    expect(await r.redis.pttl(accountKeys('arf').refused)).toBeGreaterThan(FACT_TTL_MS - 60_000);
    const newest = await refusedCalls(r.redis, 'arf', { fromMs: 0, toMs: Date.now() + 60_000, limit: 1 });
    expect(newest[0]!.requestId).toMatch(/^req_f/);
  });

  it('an account Redis does not hold (it lost its data) gets nothing: no fact, no refusal, no last use', async () => {
    await recordCallFact(
      r.redis,
      'acf_gone',
      { requestId: 'req_g', keyId: 'kg' },
      {
        status: 200,
        latencyMs: 1,
        ttftMs: null,
        finishReason: 'stop',
      },
    );
    await recordRefused(r.redis, 'acf_gone', {
      requestId: 'req_h',
      status: 400,
      code: 'invalid_request',
      latencyMs: 1,
      route: '/v1/chat/completions',
      keyId: 'kg',
      model: null,
    });
    expect(await r.redis.keys('{a:acf_gone}*')).toEqual([]);
  });
});
