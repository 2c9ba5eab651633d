// Interactive calls first (docs/batches.md "Idle capacity"), on real Redis and a simulator engine
// with two slots: while a batch's lines hold both slots, interactive calls arrive; the lines holding
// the slots they need are preempted (their engine calls cancelled, no result written), no line
// starts while the calls run, the calls succeed, and the preempted lines run again afterwards —
// each line billed exactly once at the batch price, the hold released, the ledger check clean.
// Nothing here is timed: each step waits for a state (generously, the machine is shared).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchTokenPrice, textCost } from '../../core/billing/index.ts';
import { totalDemand } from '../../core/demand/demand.ts';
import { batchCharges, batchEnded, jsonlFile, uploadLines } from '../helpers/batches.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { until } from '../helpers/until.ts';
import { type Harness, startHarness } from './harness.ts';

const MODEL = 'Batch/Preempt';
const PRICE = { input: '1', output: '2' };
const LINES = 6;

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    // One line may run per free slot; a single interactive call on the one endpoint stops admission.
    { BATCH_POLL_MS: '30', BATCH_LOCK_MS: '2000', BATCH_CONCURRENCY: '2', BATCH_IDLE_BELOW: '1' },
    {
      entries: (endpoints) => [
        {
          id: MODEL,
          kind: 'chat',
          pricing: { USD: PRICE },
          batchDiscountPercent: 50,
          maxOutputTokens: 400,
          endpoints: [endpoints[0]!],
          created: 1_700_000_000,
        },
      ],
    },
  );
  // Lines long enough (40 tokens) that they still hold both slots when the interactive calls come.
  h.sims[0]!.setOptions({ itlMs: 25, maxConcurrency: 2 });
});
afterAll(async () => {
  await h?.stop();
});

/** How often the engine was asked each batch line (by its prompt). */
function lineRuns(): Map<string, number> {
  const runs = new Map<string, number>();
  for (const r of h.sims[0]!.received()) {
    const content = (r.json as { messages?: { content?: unknown }[] } | null)?.messages?.[0]?.content;
    if (typeof content === 'string' && content.startsWith('line '))
      runs.set(content, (runs.get(content) ?? 0) + 1);
  }
  return runs;
}

describe('batch lines and interactive calls on one engine', () => {
  it('BILL-5 lines holding the slots are preempted and back off while interactive calls run; the calls succeed; each line is run again and billed once', async () => {
    const acct = await h.newAccount({ credit: '10' });
    const client = h.client(acct.secret);
    const sim = h.sims[0]!;
    const file = await uploadLines(
      client,
      '/v1/chat/completions',
      Array.from({ length: LINES }, (_, i) => ({
        custom_id: `l${i}`,
        body: {
          model: MODEL,
          messages: [{ role: 'user', content: `line ${i}` }],
          max_tokens: 40,
          ignore_eos: true,
        },
      })),
    );
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await until(() => sim.inFlight() === 2, 'two lines holding both engine slots', 30_000);
    const linesBefore = [...lineRuns().values()].reduce((a, b) => a + b, 0);

    // Two interactive streams arrive: each takes a slot a line held. They are held open (read
    // slowly) so the runner's back-off can be watched while they run.
    const streams = await Promise.all(
      [0, 1].map((j) =>
        client.chat.completions.create({
          model: MODEL,
          messages: [{ role: 'user', content: `interactive ${j}` }],
          max_tokens: 200,
          stream: true,
          // vLLM's: the call runs its whole 200 tokens, so both are still running while watched.
          ...{ ignore_eos: true },
        }),
      ),
    );
    const readers = streams.map((s) => s[Symbol.asyncIterator]());
    const first = await Promise.all(readers.map((r) => r.next()));
    for (const f of first) expect(f.done).toBe(false);
    // Both lines were cut (the engine and the proxy now hold only the two calls), and none starts
    // while they run: several poll intervals later the proxy still counts just the two calls for the
    // model (in an engine, queued or held: a line admitted would be counted wherever it waited).
    const demand = () => totalDemand(h.proxy.ctx.engine.demand!.get(MODEL));
    await until(() => sim.inFlight() === 2 && demand() === 2, 'the lines preempted', 30_000);
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 50));
      expect(demand()).toBe(2);
    }
    const countsDuring = await client.batches.retrieve(batch.id);
    expect(countsDuring.request_counts!.completed).toBeLessThan(LINES);

    // The calls finish whole.
    for (const r of readers) {
      let text = '';
      for (let n = await r.next(); !n.done; n = await r.next())
        text += n.value.choices[0]?.delta.content ?? '';
      expect(text.length).toBeGreaterThan(0);
    }

    // The lines start again and the batch completes: every line once in the output.
    const b = await batchEnded(client, batch.id);
    expect(b.status).toBe('completed');
    expect(b.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
    const runs = lineRuns();
    const total = [...runs.values()].reduce((a, c) => a + c, 0);
    // At least the two preempted lines were asked of the engine twice.
    expect(total).toBeGreaterThanOrEqual(LINES + 2);
    expect(total).toBeGreaterThan(linesBefore);
    expect([...runs.values()].filter((n) => n > 1).length).toBeGreaterThanOrEqual(2);

    const out = await jsonlFile(client, b.output_file_id);
    expect(out.map((l) => l.custom_id)).toEqual(Array.from({ length: LINES }, (_, i) => `l${i}`));
    const price = batchTokenPrice(PRICE, 50);
    const charges = await batchCharges(h.redis.client(), acct.accountId, b.id);
    for (const [i, l] of out.entries()) {
      const u = l.response.body.usage;
      expect(u.completion_tokens).toBe(40);
      const cost = textCost(price, {
        inputTokens: u.prompt_tokens,
        cachedTokens: 0,
        outputTokens: u.completion_tokens,
      });
      // Billed once for the run that wrote the result; the cut runs cost nothing.
      expect((charges.get(i) ?? []).map((e) => e.amount)).toEqual([cost]);
    }
    expect([...charges.keys()].sort()).toEqual(out.map((_, i) => i));
    expect((await h.settled(acct.accountId)).held).toBe(0);
    await expectLedgerClean(h.redis.client(), [acct.accountId]);
  });
});
