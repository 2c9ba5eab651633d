// A batch's hold and the replicas' credit leases (docs/batches.md "Billing"), on real Redis, two
// proxy replicas and the simulator. A replica leases part of an account's balance to serve its calls
// fast; the money is still the account's. A batch whose estimate the balance covers, but not the
// balance less another replica's lease, is created: the creating replica first has every replica
// give back its unused lease money (as an interactive call near its limit does), then holds the
// estimate. The batch runs, each line is billed once, and the ledger check is clean.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Batches } from '../../core/jobs/batches.ts';
import { batchCharges, batchEnded, createChatBatch } from '../helpers/batches.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, type Harness, secondReplica, startHarness } from './harness.ts';

const LINES = 20;
const lines = Array.from({ length: LINES }, (_, i) => ({
  custom_id: `l${i}`,
  body: { model: CHAT_MODEL, messages: [{ role: 'user', content: `line ${i}` }], max_tokens: 200 },
}));

let h: Harness;
let b: Awaited<ReturnType<typeof secondReplica>>;
beforeAll(async () => {
  // Leases stay held while the test looks (they would be given back after 1 s idle otherwise).
  h = await startHarness({ BATCH_POLL_MS: '30', BATCH_LOCK_MS: '2000', PROXY_LEASE_IDLE_MS: '600000' });
  b = await secondReplica(h);
});
afterAll(async () => {
  await b?.stop();
  await h?.stop();
});

describe('a batch created while another replica leases the account’s money', () => {
  it('BILL-6 the leases are given back first: a batch the balance covers is created, billed once per line, and the ledger is clean', async () => {
    // What these lines hold, measured on an account with plenty.
    const rich = await h.newAccount({ credit: '10' });
    const probe = await createChatBatch(h.client(rich.secret), lines);
    const estimate = Number((await new Batches(h.redis.client()).get(rich.accountId, probe.id))?.estimate);
    expect(estimate).toBeGreaterThan(0);
    await batchEnded(h.client(rich.secret), probe.id);

    // An account with a tenth more than the estimate; an interactive call through replica B has B
    // lease part of it (up to an eighth of what is available).
    const acct = await h.newAccount({ credit: '0' });
    await h.metering.topUp({
      accountId: acct.accountId,
      topUpId: 'lease-reclaim',
      amount: estimate + Math.floor(estimate / 10),
    });
    const viaB = new OpenAI({ apiKey: acct.secret, baseURL: b.baseURL, maxRetries: 0 });
    await viaB.chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 5,
    });
    // The lease grows in the background after the call: wait until it holds money and stops moving.
    let before = await h.metering.balance(acct.accountId);
    for (let i = 0; i < 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      const now = await h.metering.balance(acct.accountId);
      if (now.held > 0 && now.held === before.held) break;
      before = now;
    }
    // The situation the fix is for: the balance covers the estimate, what the lease leaves does not.
    expect(before.balance).toBeGreaterThanOrEqual(estimate);
    expect(before.available).toBeLessThan(estimate);

    // Created through replica A (the harness): B gives its lease money back, A holds the estimate.
    const batch = await createChatBatch(h.client(acct.secret), lines);
    expect(['validating', 'in_progress']).toContain(batch.status);
    const ended = await batchEnded(h.client(acct.secret), batch.id);
    expect(ended.status).toBe('completed');
    expect(ended.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
    const charges = await batchCharges(h.redis.client(), acct.accountId, batch.id);
    expect([...charges.keys()].sort((x, y) => x - y)).toEqual(lines.map((_, i) => i));
    for (const c of charges.values()) expect(c).toHaveLength(1);

    await b.proxy.ctx.billing.quiesce();
    expect((await h.settled(acct.accountId)).held).toBe(0);
    await expectLedgerClean(h.redis.client(), [acct.accountId, rich.accountId]);
  });
});
