// Credit leases through the proxy: concurrent requests carve their holds from the replica's lease
// (no reserve in Redis) and are settled in batches, yet after quiesce the balance is exactly the
// top-up minus the usage records; near the limit the exact reserve-first path still lowers
// max_tokens (the replica gives its own lease money back first); two proxy apps with leases on one
// Redis never take an account below zero.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDecimalToNano } from '../../core/money.ts';
import { recomputeBalanceFromStream, usageRecords, usageReport } from '../../core/usage/usage.ts';
import { buildProxyApp, type ProxyApp } from '../../proxy/app.ts';
import { DEFAULT_PROMPT_BOUNDS } from '../../proxy/billing/text-quote.ts';
import { CHAT_MODEL, EMBED_MODEL, type Harness, startHarness, tempDataDir } from './harness.ts';

const messages = [{ role: 'user' as const, content: 'hi' }];
const IN = 1_000; // nano per input token (harness prices)
const OUT = 2_000;
// The hold's input bound: the prompt's JSON bytes, the template's tokens around the message and the
// reply, and its tokens per request (the harness models set no promptBounds: the defaults).
const { perMessage, perRequest } = DEFAULT_PROMPT_BOUNDS;
const promptBound = (Buffer.byteLength(JSON.stringify(messages)) + 2 * perMessage + perRequest) * IN;

let h: Harness;
let small: Harness; // leases of at most 0.0002 USD
beforeAll(async () => {
  [h, small] = await Promise.all([startHarness(), startHarness({ PROXY_LEASE_MAX: '0.0002' })]);
});
afterAll(async () => {
  await Promise.all([h?.stop(), small?.stop()]);
});

async function ledger(t: Harness, accountId: string, credit: number) {
  const b = await t.settled(accountId);
  const charges = (await usageRecords(t.redis.client(), accountId, { count: 10_000 })).filter(
    (r) => r.type === 'charge',
  );
  const charged = charges.reduce((s, r) => s + r.amount, 0);
  const rollups = await usageReport(t.redis.client(), { accountId, fromMs: 0, toMs: Date.now() + 3_600_000 });
  expect(b.held).toBe(0);
  expect(b.balance).toBe(credit - charged);
  expect(await recomputeBalanceFromStream(t.redis.client(), accountId)).toBe(b.balance);
  expect(rollups.reduce((s, r) => s + r.cost, 0)).toBe(charged);
  return { balance: b.balance, charges };
}

/** Counts the proxy's reserves in Redis (the path the lease replaces). */
function countReserves(app: ProxyApp): () => number {
  const m = app.ctx.billing.metering;
  const reserve = m.reserve.bind(m);
  let n = 0;
  m.reserve = (a) => {
    n++;
    return reserve(a);
  };
  return () => n;
}

describe('credit leases', () => {
  it('BILL-5 many concurrent requests carve from the lease; after quiesce balance = top-up − Σ usage, exactly', async () => {
    const credit = parseDecimalToNano('5');
    const a = await h.newAccount({ credit: '5' });
    const reserves = countReserves(h.proxy);
    const c = h.client(a.secret);
    const one = async (i: number) => {
      if (i % 4 === 3) return c.embeddings.create({ model: EMBED_MODEL, input: `text ${i}` });
      if (i % 4 === 2) {
        const s = await c.chat.completions.create({
          model: CHAT_MODEL,
          messages,
          stream: true,
          max_tokens: 30,
        });
        let n = 0;
        for await (const _ of s) if (++n === 3 && i % 8 === 2) break; // some cut by the client: still billed
        return;
      }
      return c.chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 5 + (i % 9) });
    };
    await one(0); // the first request reserves and starts the lease
    await new Promise((r) => setTimeout(r, 50));
    const before = reserves();
    for (let wave = 0; wave < 4; wave++) await Promise.all(Array.from({ length: 50 }, (_, i) => one(i + 1)));
    expect(reserves() - before).toBeLessThan(20); // nearly all 200 carved in memory
    const { charges } = await ledger(h, a.accountId, credit);
    expect(charges).toHaveLength(201);
    expect(new Set(charges.map((r) => r.opId)).size).toBe(201);
    for (const r of charges) expect(r.amount).toBeGreaterThan(0);
  });

  it('BILL-6 near the limit the reserve-first path lowers max_tokens, using the replica’s own lease money', async () => {
    const t = small;
    const a = await t.newAccount({ credit: '1' });
    const c = t.client(a.secret);
    for (let i = 0; i < 4; i++)
      await c.chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 5 });
    // The lease grows in the background after a call: wait until it holds money and stopped moving.
    // The calls' settles land in batches a tick later; a loaded machine delayed one past this wait
    // and its charge then lowered the balance under the test (144 tokens covered, not 150), so
    // every queued settle lands before the balance is read: nothing else moves it.
    let b = await t.metering.balance(a.accountId);
    for (let i = 0; i < 100; i++) {
      await new Promise((r) => setTimeout(r, 50));
      await t.settleQueued();
      const now = await t.metering.balance(a.accountId);
      if (now.held > 0 && now.held === b.held && now.balance === b.balance) break;
      b = now;
    }
    const lease = b.held;
    expect(lease).toBeGreaterThan(0); // a lease is held…
    expect(lease).toBeLessThanOrEqual(200_000); // …within PROXY_LEASE_MAX
    // Another party holds all but exactly 150 output tokens' worth (lease included).
    const covered = 150;
    const other = b.balance - promptBound - covered * OUT;
    const r = await t.metering.reserve({
      accountId: a.accountId,
      holdId: 'other',
      min: other,
      max: other,
      ttlMs: 60_000,
    });
    expect(r.ok).toBe(true);
    const res = await c.chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 200 });
    expect(res.usage!.completion_tokens).toBeLessThanOrEqual(covered);
    const sent = t.sims
      .flatMap((s) => s.received())
      .filter((x) => x.path === '/v1/chat/completions')
      .at(-1);
    expect((sent!.json as { max_tokens: number }).max_tokens).toBe(covered);
    // Not even the input: 429, nothing charged.
    await t.quiesce();
    const left = (await t.metering.balance(a.accountId)).available - (promptBound - 1);
    await t.metering.reserve({ accountId: a.accountId, holdId: 'more', min: left, max: left, ttlMs: 60_000 });
    const err = await c.chat.completions.create({ model: CHAT_MODEL, messages }).catch((e: unknown) => e);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('insufficient_quota');
    await t.metering.release(a.accountId, 'other');
    await t.metering.release(a.accountId, 'more');
    await ledger(t, a.accountId, parseDecimalToNano('1'));
  });

  it('BILL-6 two proxy apps with leases on one Redis never take the balance below zero', async () => {
    const second = await buildProxyApp({
      config: { ...h.config, PROXY_DATA_DIR: tempDataDir() },
      redis: h.redis.client(),
      subscriber: h.redis.client(),
      catalogue: h.snapshot,
      logger: false,
    });
    await second.app.listen({ host: '127.0.0.1', port: 0 });
    const addr = second.app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : 0;
    try {
      const credit = 3_000_000; // ≈ 40 holds of max_tokens 20: enough for leases on both apps
      const a = await h.newAccount({ credit: '0' });
      await h.metering.topUp({ accountId: a.accountId, topUpId: 'two', amount: credit });
      const clients = [
        h.client(a.secret),
        new OpenAI({ apiKey: a.secret, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 }),
      ];
      let lowest = Number.POSITIVE_INFINITY;
      let polling = true;
      const poll = (async () => {
        while (polling) {
          const b = await h.metering.balance(a.accountId);
          lowest = Math.min(lowest, b.balance, b.available);
          await new Promise((r) => setTimeout(r, 2));
        }
      })();
      let ok = 0;
      let refused = 0;
      for (let wave = 0; wave < 6; wave++) {
        const results = await Promise.allSettled(
          Array.from({ length: 24 }, (_, i) =>
            clients[i % 2]!.chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 20 }),
          ),
        );
        for (const r of results) {
          if (r.status === 'fulfilled') ok++;
          else {
            refused++;
            expect((r.reason as InstanceType<typeof OpenAI.APIError>).code).toBe('insufficient_quota');
          }
        }
      }
      polling = false;
      await poll;
      await second.ctx.billing.quiesce();
      expect(ok).toBeGreaterThan(20);
      expect(refused).toBeGreaterThan(0);
      expect(lowest).toBeGreaterThanOrEqual(0);
      const { balance, charges } = await ledger(h, a.accountId, credit);
      expect(balance).toBeGreaterThanOrEqual(0);
      expect(charges).toHaveLength(ok);
    } finally {
      const closing = second.app.close();
      second.app.server.closeAllConnections();
      await closing;
    }
  });
});
