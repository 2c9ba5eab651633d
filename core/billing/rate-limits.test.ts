// Per-key rate limits (issue 34), taken in the reserve script with the credit hold: exact across
// replicas (two connections stand for two proxies), given back at settle and release, and a dead
// proxy's running slot freed by the sweeper. Real Redis; every test ends with the ledger check,
// which also proves the windows' running slots against the open holds.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { redisForFile } from '../../test/helpers/redis-per-file.ts';
import { Accounts } from '../accounts/accounts.ts';
import { newId } from '../ids.ts';
import { ApiKeys } from '../keys/index.ts';
import { checkAccountLedger } from '../ledger/ledger.ts';
import { Metering } from './metering.ts';
import type { RateLimits } from './rate-limits.ts';
import { rateUse, rateUseFields } from './rate-limits.ts';
import { sweepDueHolds } from './sweeper.ts';

const TTL = 60_000;

describe('key rate limits', () => {
  const r = redisForFile();
  const apiKeys = () => new ApiKeys(r.redis, { brand: 'service', kek: randomBytes(32) });

  async function setup(limits: Partial<RateLimits>) {
    const accountId = newId('acct');
    await new Accounts(r.redis).create({ id: accountId, name: 'a', country: 'US' });
    const m = new Metering(r.redis);
    await m.topUp({ accountId, topUpId: newId('top'), amount: 1_000_000_000 });
    const { key } = await apiKeys().create(accountId, { name: 'tool' });
    await apiKeys().setRateLimits(accountId, key.id, limits);
    return { accountId, keyId: key.id, m };
  }
  const reserve = (m: Metering, accountId: string, keyId: string, holdId: string, out = 0, ttlMs = TTL) =>
    m.reserve({ accountId, holdId, min: 10, max: 100, ttlMs, keyId, tokens: { input: 5, output: out } });
  const usage = (keyId: string, out: number) => ({
    keyId,
    model: 'm',
    kind: 'chat' as const,
    inputTokens: 5,
    outputTokens: out,
  });
  async function expectLedgerClean(accountId: string) {
    expect((await checkAccountLedger(r.redis, accountId, { toleranceMs: 0 })).problems).toEqual([]);
  }

  it('the N+1th request of a minute is refused under concurrency from two replicas, none earlier', async () => {
    const { accountId, keyId } = await setup({ requestsPerMinute: 3 });
    const other = r.server.client();
    const replicas = [new Metering(r.redis), new Metering(other)];
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => reserve(replicas[i % 2]!, accountId, keyId, `req_${i}`)),
    );
    const ok = results.filter((x) => x.ok);
    expect(ok).toHaveLength(3);
    for (const x of results) {
      if (x.ok) continue;
      expect(x.rateLimit).toMatchObject({ limit: 'requestsPerMinute', value: 3 });
      // A limit of 3 a minute refills one every 20 s.
      expect(x.rateLimit!.retryAfterMs).toBeGreaterThan(0);
      expect(x.rateLimit!.retryAfterMs).toBeLessThanOrEqual(20_000);
    }
    const last = ok.map((x) => (x.ok ? x.windows!.requests!.remaining : -1));
    expect(last.sort()).toEqual([0, 1, 2]);
    for (let i = 0; i < 8; i++)
      if (results[i]!.ok)
        await replicas[0]!.settle({ accountId, holdId: `req_${i}`, cost: 20, usage: usage(keyId, 0) });
    other.disconnect();
    await expectLedgerClean(accountId);
  });

  it('output tokens are reserved at the max and what the call did not use comes back at settle', async () => {
    const { accountId, keyId, m } = await setup({ outputTokensPerMinute: 100 });
    const first = await reserve(m, accountId, keyId, 'req_a', 60);
    expect(first.ok && first.windows!.outputTokens!.remaining).toBe(40);
    const second = await reserve(m, accountId, keyId, 'req_b', 60);
    expect(second.ok).toBe(false);
    expect(!second.ok && second.rateLimit!.limit).toBe('outputTokensPerMinute');
    expect((await m.balance(accountId)).held).toBe(100); // the refused call held nothing
    await m.settle({ accountId, holdId: 'req_a', cost: 30, usage: usage(keyId, 10) });
    const third = await reserve(m, accountId, keyId, 'req_c', 60);
    expect(third.ok).toBe(true);
    // 10 used by the first, 60 reserved now (the refill may have added one or two).
    expect(third.ok && third.windows!.outputTokens!.remaining).toBeGreaterThanOrEqual(30);
    await m.release(accountId, 'req_c');
    await expectLedgerClean(accountId);
  });

  it('a calls-at-once refusal says when the oldest running call is expected to end, from the key’s recent durations', async () => {
    const { accountId, keyId, m } = await setup({ concurrentCalls: 1 });
    const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));
    // No call of the key has ended yet: at least the second it was always told.
    expect((await reserve(m, accountId, keyId, 'req_1')).ok).toBe(true);
    const first = await reserve(m, accountId, keyId, 'req_x');
    expect(!first.ok && first.rateLimit!.retryAfterMs).toBeGreaterThanOrEqual(1000);
    // One call of about 600 ms settles: the key's recent duration.
    await sleep(600);
    await m.settle({ accountId, holdId: 'req_1', cost: 10, usage: usage(keyId, 0) });
    // The next has run ~200 ms when another is refused: its slot is due in ~400 ms, and the retry
    // is told a little after (a tenth of the duration), never the flat second.
    expect((await reserve(m, accountId, keyId, 'req_2')).ok).toBe(true);
    await sleep(200);
    const refused = await reserve(m, accountId, keyId, 'req_y');
    expect(!refused.ok && refused.rateLimit).toMatchObject({ limit: 'concurrentCalls', value: 1 });
    const retry = !refused.ok ? refused.rateLimit!.retryAfterMs : 0;
    expect(retry).toBeGreaterThan(300);
    expect(retry).toBeLessThan(700);
    // A call past the recent duration: a quarter of a duration on, plus the margin.
    await sleep(700);
    const late = await reserve(m, accountId, keyId, 'req_z');
    const lateRetry = !late.ok ? late.rateLimit!.retryAfterMs : 0;
    expect(lateRetry).toBeGreaterThanOrEqual(150 + 50);
    expect(lateRetry).toBeLessThan(retry);
    await m.settle({ accountId, holdId: 'req_2', cost: 10, usage: usage(keyId, 0) });
    // A slot that comes back leaves no start behind, and the retry told was enough.
    expect((await reserve(m, accountId, keyId, 'req_3')).ok).toBe(true);
    await m.release(accountId, 'req_3');
    await expectLedgerClean(accountId);
  });

  it('a crashed proxy’s running slot comes back once the sweeper voids its hold', async () => {
    const { accountId, keyId, m } = await setup({ concurrentCalls: 1 });
    expect((await reserve(m, accountId, keyId, 'req_dead', 0, 200)).ok).toBe(true);
    const blocked = await reserve(m, accountId, keyId, 'req_2');
    expect(!blocked.ok && blocked.rateLimit).toMatchObject({ limit: 'concurrentCalls', value: 1 });
    await new Promise((res) => setTimeout(res, 400)); // the owner never renews: it died
    const voided = await sweepDueHolds(r.redis);
    expect(voided.map((v) => v.holdId)).toContain('req_dead');
    const after = await reserve(m, accountId, keyId, 'req_3');
    expect(after.ok).toBe(true);
    await m.settle({ accountId, holdId: 'req_3', cost: 10, usage: usage(keyId, 0) });
    await expectLedgerClean(accountId);
  });

  it('a release gives the request and its tokens back; an account default binds keys without their own', async () => {
    const { accountId, keyId, m } = await setup({ requestsPerMinute: 1 });
    expect((await reserve(m, accountId, keyId, 'req_1')).ok).toBe(true);
    await m.release(accountId, 'req_1');
    expect((await reserve(m, accountId, keyId, 'req_2')).ok).toBe(true);
    expect((await reserve(m, accountId, keyId, 'req_3')).ok).toBe(false);
    await m.release(accountId, 'req_2');

    await new Accounts(r.redis).setRateLimits(accountId, { requestsPerMinute: 1 });
    const { key: plain } = await apiKeys().create(accountId, { name: 'plain' });
    expect((await reserve(m, accountId, plain.id, 'req_4')).ok).toBe(true);
    const refused = await reserve(m, accountId, plain.id, 'req_5');
    expect(!refused.ok && refused.rateLimit!.limit).toBe('requestsPerMinute');
    await m.settle({ accountId, holdId: 'req_4', cost: 10, usage: usage(plain.id, 0) });
    await expectLedgerClean(accountId);
  });

  it('BILL-6 a key without limits reserves as before: no windows; the balance still refuses with its own answer', async () => {
    const { accountId, m } = await setup({});
    const { key } = await apiKeys().create(accountId, { name: 'free' });
    const ok = await reserve(m, accountId, key.id, 'req_1');
    expect(ok.ok && ok.windows).toBeNull();
    const poor = await m.reserve({
      accountId,
      holdId: 'req_2',
      min: 2_000_000_000,
      max: 2_000_000_000,
      ttlMs: TTL,
      keyId: key.id,
    });
    expect(poor).toMatchObject({ ok: false, rateLimit: null, keyLimit: null });
    await m.release(accountId, 'req_1');
    await expectLedgerClean(accountId);
  });
});

describe('rateUse: what a key has taken of each limit now', () => {
  it('a bucket drains by its limit a millisecond (in 1/60000 units), never below empty; calls running as counted', () => {
    const fields = {
      // 30 requests taken 1 s ago at 60 a minute: 1 drained a second → 29 left (rounded up).
      requestsPerMinute: `${30 * 60_000}:1000:60`,
      inputTokensPerMinute: null,
      // In debt (a call used more than it took): shown as 0.
      outputTokensPerMinute: '-5000:1000:100',
      concurrentCalls: '2',
    };
    expect(rateUse(fields, 2_000)).toEqual({
      requestsPerMinute: 29,
      inputTokensPerMinute: 0,
      outputTokensPerMinute: 0,
      concurrentCalls: 2,
    });
    // Long after: empty.
    expect(rateUse(fields, 3_600_000).requestsPerMinute).toBe(0);
    expect(rateUseFields('k1')).toEqual(['wr:k1', 'wi:k1', 'wo:k1', 'wc:k1']);
  });
});
