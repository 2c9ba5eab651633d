// Video money through the replica's one billing door (issue 18): a video job is charged at
// creation through Billing (CallCharge.chargeNow), so the gate that refuses billable calls while
// settlements cannot reach Redis refuses a video create too, and the charge counts in the
// credits-charged metric like every other call's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { scrapeMetrics } from '../helpers/metrics.ts';
import { until } from '../helpers/until.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

const VIDEO_MODEL = 'Vid/Billed';
const messages = [{ role: 'user' as const, content: 'hi' }];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    { PROXY_OUTBOX_STALL_MS: '500', VIDEO_POLL_MS: '40' },
    {
      redis: { aof: true },
      entries: (endpoints) => [
        {
          id: VIDEO_MODEL,
          kind: 'video',
          pricing: { USD: { perSecond: '0.1' } },
          endpoints,
          created: 1_700_000_000,
        },
      ],
    },
  );
});
afterAll(async () => h?.stop());

const scrape = () => scrapeMetrics(h.metricsURL);

async function refusedCount(): Promise<number> {
  return (await h.proxy.ctx.metrics.billingRefused.get()).values.reduce((s, v) => s + v.value, 0);
}

describe('video money through billing', () => {
  it('BILL-4 ERR-3 a video create is refused while the settlement outbox is stalled (no job, nothing charged); once it drains a video is charged and counted in the credits metric', async () => {
    const a = await h.newAccount({ credit: '1' });
    const c = h.client(a.secret);
    const createVideo = (seconds: string) =>
      fetch(`${h.baseURL}/videos`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: VIDEO_MODEL, prompt: 'a billed video', seconds }),
      });
    // Calls carved from a lease are served while Redis is away, their settlements waiting in the
    // outbox: that is how the outbox comes to be stalled while the proxy still runs.
    for (let i = 0; i < 3; i++) {
      await c.chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 5 });
      await sleep(30); // the lease grows in the background
    }
    await until(() => h.proxy.ctx.billing.leases!.freeOf(a.accountId) > 0, 'the lease holds money');
    await h.redis.kill();
    await c.chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 5 });
    await until(() => h.proxy.ctx.billing.outbox.stalledMs() > 500, 'settlements kept failing', 10_000);

    const before = await refusedCount();
    const refused = await createVideo('2');
    expect(refused.status).toBe(500);
    expect(refused.headers.get('retry-after')).toBe('1'); // the gate's answer: retryable, nothing done
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('server_error');
    expect(body.error.message).toMatch(/Billing is unavailable/);
    expect(await refusedCount()).toBe(before + 1);

    await h.redis.restart();
    await until(() => h.proxy.ctx.billing.outbox.pending === 0, 'the outbox drained', 10_000);
    const made = await createVideo('2');
    expect(made.status).toBe(200);
    const job = (await made.json()) as { id: string; status: string };
    expect(job.status).toBe('queued');
    // The refused create left no job behind: the account has exactly the one made after.
    expect((await c.videos.list()).data.map((v) => v.id)).toEqual([job.id]);

    await h.settled(a.accountId);
    const records = await usageRecords(h.redis.client(), a.accountId, { count: 100 });
    const videoCharges = records.filter((r) => r.type === 'charge' && r.model === VIDEO_MODEL);
    expect(videoCharges.map((r) => r.amount)).toEqual([200_000_000]); // 2 s × 0.1 USD
    const m = await scrape();
    expect(m.get(`mp_proxy_credits_charged_nano_total{model="${VIDEO_MODEL}",currency="USD"}`)).toBe(
      200_000_000,
    );
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});
