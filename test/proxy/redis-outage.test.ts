// A Redis outage through the real proxy: calls carved from a lease are still served while their
// settlements wait in the outbox; once settlements have failed for PROXY_OUTBOX_STALL_MS the proxy
// refuses billable calls (a retryable 500 with Retry-After) and reports itself not ready, instead of
// serving what it cannot bill; when Redis is back the outbox lands every delivered call, once.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { until } from '../helpers/until.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

const messages = [{ role: 'user' as const, content: 'hi' }];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ PROXY_OUTBOX_STALL_MS: '500' }, { redis: { aof: true } });
});
afterAll(async () => h?.stop());

describe('Redis outage', () => {
  it('ERR-3 serves from the lease while settlements wait, then refuses with a retryable 500 and goes unready; every delivered call is charged once Redis is back', async () => {
    const a = await h.newAccount({ credit: '1' });
    const c = h.client(a.secret);
    const delivered: string[] = [];
    const call = async () => {
      const r = await c.chat.completions
        .create({ model: CHAT_MODEL, messages, max_tokens: 5 })
        .withResponse();
      delivered.push(r.response.headers.get('x-request-id')!);
    };
    for (let i = 0; i < 3; i++) {
      await call();
      await sleep(30); // the lease grows in the background
    }
    await until(() => h.proxy.ctx.billing.leases!.freeOf(a.accountId) > 0, 'the lease holds money');
    await h.redis.kill();
    // Carved from the lease in memory: served, its settlement journaled and waiting.
    await call();
    await call();
    await until(() => h.proxy.ctx.billing.outbox.stalledMs() > 500, 'settlements kept failing');
    const refused = await c.chat.completions
      .create({ model: CHAT_MODEL, messages, max_tokens: 5 })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    const err = refused as InstanceType<typeof OpenAI.APIError>;
    expect(err.status).toBe(500);
    expect(err.code).toBe('server_error');
    expect(err.headers?.get('retry-after')).toBe('1');
    expect(err.headers?.get('x-should-retry')).toBeNull(); // retryable: nothing was done or billed
    const ready = await fetch(h.baseURL.replace(/\/v1$/, '/readyz'));
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { checks: Record<string, boolean> }).checks.billing).toBe(false);

    await h.redis.restart();
    await until(() => h.proxy.ctx.billing.outbox.pending === 0, 'the outbox drained');
    await call(); // served again
    expect((await fetch(h.baseURL.replace(/\/v1$/, '/readyz'))).status).toBe(200);
    await h.settled(a.accountId);
    const charges = (await usageRecords(h.redis.client(), a.accountId, { count: 100 })).filter(
      (e) => e.type === 'charge',
    );
    expect(charges.map((e) => e.requestId).sort()).toEqual([...delivered].sort());
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});
