// LoRA adapter Models (issue 31 item 4, docs/models.md#adapters) from the operator's plan to the
// bill: two adapters of one base are loaded on the simulators by the operator's own plan and apply
// (operator/adapters/reconcile.ts, apply.ts), catalogued as models of their own, and called with the official
// openai and @anthropic-ai/sdk clients, streamed and not. Each call reaches only engines that hold
// its adapter, asks them by the adapter's name, and is billed at that adapter's own price.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CatalogueEntryInput } from '../../core/catalogue/entry.ts';
import { CatalogueStore } from '../../core/catalogue/store.ts';

import { usageRecords } from '../../core/usage/usage.ts';
import { applyAdapterStep, observeBasePods } from '../../operator/adapters/apply.ts';
import { planAdapterStep } from '../../operator/adapters/reconcile.ts';

import { chatModel } from '../../operator/fixtures.ts';
import type { Model } from '../../operator/model/model.ts';
import { planModel } from '../../operator/reconcile/plan.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

const TONE = 'Acme/Support-Tone';
const LEGAL = 'Acme/Legal-Style';
// Nano-units per token: 3 and 5 USD per million tokens for TONE, 7 and 11 for LEGAL.
const price = { [TONE]: [3_000, 5_000], [LEGAL]: [7_000, 11_000] } as const;

let h: Harness;
const base = chatModel('base', { id: CHAT_MODEL, engine: { type: 'simulator', lora: { maxLoras: 4 } } });
const adapter = (name: string, id: string, usd: [string, string]): Model =>
  chatModel(name, {
    id,
    engine: undefined,
    capabilities: {},
    adapter: { base: 'base', source: `/adapters/${name}` },
    pricing: { USD: { input: usd[0], output: usd[1] } },
  });

/** What the leader does for an adapter Model: observe the base URLs, plan it, load it there, publish it. */
async function reconcile(model: Model, baseUrls: string[]): Promise<CatalogueEntryInput> {
  const now = new Date().toISOString();
  const planned = planModel(model, { deployment: null, serviceExists: false, endpointSlices: [], now });
  const step = planAdapterStep(model, planned, base, await observeBasePods(baseUrls), now);
  const plan = await applyAdapterStep(step);
  if (plan.catalogue.action !== 'put') throw new Error(`not catalogued: ${plan.reasons.join('; ')}`);
  return plan.catalogue.entry;
}

beforeAll(async () => {
  h = await startHarness();
  const [a, b] = h.sims.map((s) => s.url) as [string, string];
  const store = new CatalogueStore(h.redis.client());
  // TONE on both engines; LEGAL only on the second (as if the first were not ready when it loaded).
  await store.put(await reconcile(adapter('tone', TONE, ['3', '5']), [a, b]));
  await store.put(await reconcile(adapter('legal', LEGAL, ['7', '11']), [b]));
  for (let i = 0; i < 200; i++) {
    const ids = (await h.client().models.list()).data.map((m) => m.id);
    if (ids.includes(TONE) && ids.includes(LEGAL)) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('the proxy never saw the adapters');
});
afterAll(async () => {
  await h?.stop();
});

const anthropic = (secret: string) =>
  new Anthropic({ apiKey: secret, baseURL: h.baseURL.replace(/\/v1$/, ''), maxRetries: 0 });

/** One call of each dialect, streamed and not; returns the model named in each answer. */
async function fourCalls(secret: string, model: string): Promise<string[]> {
  const messages = [{ role: 'user' as const, content: 'Hi' }];
  const seen: string[] = [];
  const r = await h.client(secret).chat.completions.create({ model, messages, max_tokens: 6 });
  seen.push(r.model);
  const stream = await h.client(secret).chat.completions.create({
    model,
    messages,
    max_tokens: 6,
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const c of stream) seen.push(c.model);
  const m = await anthropic(secret).messages.create({ model, max_tokens: 6, messages });
  seen.push(m.model);
  const ms = anthropic(secret).messages.stream({ model, max_tokens: 6, messages });
  seen.push((await ms.finalMessage()).model);
  return [...new Set(seen)];
}

describe('adapter Models through the proxy', () => {
  it('are listed in /v1/models like any model', async () => {
    const ids = (await h.client().models.list()).data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining([CHAT_MODEL, TONE, LEGAL]));
    for (const s of h.sims) expect([...s.adapters().keys()]).toContain(TONE);
    expect([...h.sims[0]!.adapters().keys()]).not.toContain(LEGAL);
  });

  it('two adapters and their base, streamed and not, both dialects: each billed once at its own price, the engine asked by the adapter name, only where it is loaded', async () => {
    const acct = await h.newAccount();
    const before = h.sims.map((s) => s.received().length);
    expect(await fourCalls(acct.secret, TONE)).toEqual([TONE]);
    expect(await fourCalls(acct.secret, LEGAL)).toEqual([LEGAL]);
    await h.client(acct.secret).chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 6,
    });
    await h.settled(acct.accountId);
    const charges = (await usageRecords(h.redis.client(), acct.accountId, { count: 50 })).filter(
      (r) => r.type === 'charge',
    );
    expect(charges.map((c) => c.model).sort()).toEqual([
      ...Array(4).fill(LEGAL),
      ...Array(4).fill(TONE),
      CHAT_MODEL,
    ]);
    for (const c of charges) {
      const [input, output] = c.model === CHAT_MODEL ? [1_000, 2_000] : price[c.model as keyof typeof price];
      expect(c.outputTokens).toBeGreaterThan(0);
      expect(c.cost).toBe(c.inputTokens! * input + c.outputTokens! * output);
    }
    // The engines were asked by each adapter's name; LEGAL never reached the engine without it.
    const asked = h.sims.map((s, i) =>
      s
        .received()
        .slice(before[i])
        .map((x) => (x.json as { model?: string } | null)?.model),
    );
    expect(asked.flat().filter((m) => m === TONE)).toHaveLength(4);
    expect(asked[1]!.filter((m) => m === LEGAL)).toHaveLength(4);
    expect(asked[0]).not.toContain(LEGAL);
    await expectLedgerClean(h.redis.client(), [acct.accountId]);
  });
});
