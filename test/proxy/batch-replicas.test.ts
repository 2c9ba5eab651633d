// Interactive calls first across replicas (docs/batches.md "Idle capacity"), on real Redis, two
// proxy replicas and a simulator engine with two slots. Replica A runs the batch (replica B's
// runner is off); the interactive calls arrive through replica B, which A sees only through the
// demand B publishes in Redis. The bound stated and checked: A's lines back off (are cut and stop
// starting) before any of them could finish — each line needs at least 400 tokens × 40 ms on the
// engine — so the calls never wait for a line. Nothing is timed: it is an order of events. When
// the calls end, lines start again; the batch is then cancelled, each finished line billed once,
// the hold released, the ledger check clean.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totalDemand } from '../../core/demand/demand.ts';
import { batchCharges, batchEnded, createChatBatch } from '../helpers/batches.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { until } from '../helpers/until.ts';
import { type Harness, secondReplica, startHarness } from './harness.ts';

const MODEL = 'Batch/Replicas';
const LINES = 4;

let h: Harness;
let b: Awaited<ReturnType<typeof secondReplica>>;
beforeAll(async () => {
  h = await startHarness(
    {
      BATCH_POLL_MS: '30',
      BATCH_LOCK_MS: '2000',
      BATCH_CONCURRENCY: '2',
      BATCH_IDLE_BELOW: '1',
      PROXY_DEMAND_PUBLISH_MS: '100',
    },
    {
      entries: (endpoints) => [
        {
          id: MODEL,
          kind: 'chat',
          pricing: { USD: { input: '1', output: '2' } },
          batchDiscountPercent: 50,
          maxOutputTokens: 400,
          endpoints: [endpoints[0]!],
          created: 1_700_000_000,
        },
      ],
    },
  );
  h.sims[0]!.setOptions({ itlMs: 40, maxConcurrency: 2 });
  b = await secondReplica(h, { BATCH_RUNNER: false });
});
afterAll(async () => {
  await b?.stop();
  await h?.stop();
});

describe('batch lines on one replica, interactive calls through another', () => {
  it('BILL-5 the runner backs off for the other replica’s calls before any line could finish, resumes when they end; each finished line billed once', async () => {
    const acct = await h.newAccount({ credit: '10' });
    const client = h.client(acct.secret);
    const sim = h.sims[0]!;
    const batch = await createChatBatch(
      client,
      Array.from({ length: LINES }, (_, i) => ({
        custom_id: `l${i}`,
        body: {
          model: MODEL,
          messages: [{ role: 'user', content: `line ${i}` }],
          max_tokens: 400,
          ignore_eos: true,
        },
      })),
    );
    // A's lines in flight (A's own count: its runner's lines go through A's engine door).
    const linesOnA = () => totalDemand(h.proxy.ctx.engine.demand!.get(MODEL));
    await until(() => sim.inFlight() === 2 && linesOnA() === 2, 'two lines holding both slots', 30_000);

    // Two interactive streams through replica B.
    const viaB = new OpenAI({ apiKey: acct.secret, baseURL: b.baseURL, maxRetries: 0 });
    const streams = await Promise.all(
      [0, 1].map((j) =>
        viaB.chat.completions.create({
          model: MODEL,
          messages: [{ role: 'user', content: `interactive ${j}` }],
          max_tokens: 100,
          stream: true,
          ...{ ignore_eos: true },
        }),
      ),
    );
    const readers = streams.map((s) => s[Symbol.asyncIterator]());
    // The lines are cut, and it happened before any line finished (the bound).
    await until(() => linesOnA() === 0, 'the lines backed off', 30_000);
    expect((await client.batches.retrieve(batch.id)).request_counts!.completed).toBe(0);
    const first = await Promise.all(readers.map((r) => r.next()));
    for (const f of first) expect(f.done).toBe(false);
    // None starts again while the calls run (several runner polls).
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setTimeout(r, 60));
      expect(linesOnA()).toBe(0);
    }
    for (const r of readers) {
      let text = '';
      for (let n = await r.next(); !n.done; n = await r.next())
        text += n.value.choices[0]?.delta.content ?? '';
      expect(text.length).toBeGreaterThan(0);
    }

    // The calls ended: the lines start again (once B's demand shows them gone).
    await until(() => linesOnA() === 2, 'the lines resumed', 30_000);
    await client.batches.cancel(batch.id);
    const ended = await batchEnded(client, batch.id, 60_000);
    expect(ended.status).toBe('cancelled');
    const charges = await batchCharges(h.redis.client(), acct.accountId, batch.id);
    expect(charges.size).toBe(ended.request_counts!.completed);
    for (const c of charges.values()) expect(c).toHaveLength(1);
    await b.proxy.ctx.billing.quiesce();
    expect((await h.settled(acct.accountId)).held).toBe(0);
    await expectLedgerClean(h.redis.client(), [acct.accountId]);
  }, 120_000);
});
