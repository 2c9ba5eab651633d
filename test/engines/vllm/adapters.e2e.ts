// `make e2e-vllm`: a LoRA adapter Model on a real vLLM (issue 31 item 4). The base is started with
// exactly the operator's flags for `spec.engine.lora` (--enable-lora, --max-loras, --max-lora-rank,
// VLLM_ALLOW_RUNTIME_LORA_UPDATING); a tiny LoRA made offline (make-tiny-lora.py) is loaded at
// runtime through the operator's own plan and apply (operator/adapters/), then called through the
// proxy under its own catalogue id: vLLM answers it as the adapter, and the call is billed at the
// adapter's price from the counts vLLM reported; the base, called beside it, at the base's. The
// removal plan (the adapter Model deleted) then unloads it: vLLM lists it no more and refuses it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type UsageEntry, usageRecords } from '../../../core/usage/usage.ts';
import { applyLoads, applyUnloads, loadedAdapters } from '../../../operator/adapters/apply.ts';
import { planAdapter } from '../../../operator/adapters/plan.ts';
import { planAdapterRemoval } from '../../../operator/adapters/removal.ts';
import { expectLedgerClean } from '../../helpers/ledger.ts';
import { type Harness, startHarness } from '../../proxy/harness.ts';
import { startVllm, VLLM_CONTEXT, VLLM_MODEL, type VllmServer } from './vllm-server.ts';

const here = fileURLToPath(new URL('.', import.meta.url));
const ADAPTER = 'Tiny/Llama-2L-Tone';

let vllm: VllmServer;
let h: Harness;
let loraDir: string;

beforeAll(async () => {
  vllm = await startVllm({ engine: { lora: { maxLoras: 2, maxLoraRank: 8 } } });
  loraDir = mkdtempSync(join(tmpdir(), 'mp-lora-'));
  const python = execFileSync(join(here, 'install-vllm.sh'), { stdio: ['ignore', 'pipe', 'inherit'] })
    .toString()
    .trim();
  execFileSync(python, [join(here, 'make-tiny-lora.py'), loraDir], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  h = await startHarness(
    {},
    {
      entries: () => [
        {
          id: VLLM_MODEL,
          kind: 'chat',
          pricing: { USD: { input: '1', output: '2' } },
          contextLength: VLLM_CONTEXT,
          maxOutputTokens: 64,
          endpoints: [{ url: vllm.url }],
          created: 1_700_000_000,
        },
        {
          // As operator/adapters/publish.ts catalogues it: its own id and prices, the base's pods.
          id: ADAPTER,
          kind: 'chat',
          pricing: { USD: { input: '5', output: '7' } },
          contextLength: VLLM_CONTEXT,
          maxOutputTokens: 64,
          endpoints: [{ url: vllm.url }],
          created: 1_700_000_001,
        },
      ],
    },
  );
});
afterAll(async () => {
  await h?.stop();
  await vllm?.stop();
  if (loraDir) rmSync(loraDir, { recursive: true, force: true });
});

async function charges(accountId: string): Promise<UsageEntry[]> {
  await h.settled(accountId);
  return (await usageRecords(h.redis.client(), accountId, { count: 100 }))
    .filter((r) => r.type === 'charge')
    .reverse();
}

describe('a LoRA adapter Model on a real vLLM', () => {
  it('the operator loads it at runtime; called under its own id it is answered as the adapter and billed at its own price, the base at the base price', async () => {
    // The operator's plan against what the engine reports, then its apply.
    const pod = { name: 'vllm-0', url: vllm.url, ready: true, terminating: false };
    const before = planAdapter(
      ADAPTER,
      { base: 'tiny', source: loraDir },
      {
        exists: true,
        runtimeLoading: true,
        pods: [{ ...pod, loaded: await loadedAdapters(vllm.url) }],
      },
    );
    expect(before.load).toEqual([
      { pod: 'vllm-0', url: vllm.url, body: { lora_name: ADAPTER, lora_path: loraDir } },
    ]);
    expect(await applyLoads(before.load)).toEqual(new Map());
    const after = planAdapter(
      ADAPTER,
      { base: 'tiny', source: loraDir },
      {
        exists: true,
        runtimeLoading: true,
        pods: [{ ...pod, loaded: await loadedAdapters(vllm.url) }],
      },
    );
    expect(after).toMatchObject({ load: [], holders: ['vllm-0'], condition: { reason: 'Loaded' } });

    const a = await h.newAccount();
    const client = new OpenAI({ baseURL: h.baseURL, apiKey: a.secret, maxRetries: 0 });
    const asked = { messages: [{ role: 'user' as const, content: 'Say something kind.' }], max_tokens: 8 };
    const tone = await client.chat.completions.create({ model: ADAPTER, ...asked });
    const base = await client.chat.completions.create({ model: VLLM_MODEL, ...asked });
    expect(tone.model).toBe(ADAPTER);
    expect(base.model).toBe(VLLM_MODEL);
    const [toneCharge, baseCharge] = await charges(a.accountId);
    expect(toneCharge).toMatchObject({ model: ADAPTER, inputTokens: tone.usage!.prompt_tokens });
    expect(baseCharge).toMatchObject({ model: VLLM_MODEL, inputTokens: base.usage!.prompt_tokens });
    // Priced as itself: 5 and 7 USD per 1M tokens against the base's 1 and 2 (nano per token).
    expect(toneCharge!.amount).toBe(
      tone.usage!.prompt_tokens * 5_000 + tone.usage!.completion_tokens * 7_000,
    );
    expect(baseCharge!.amount).toBe(
      base.usage!.prompt_tokens * 1_000 + base.usage!.completion_tokens * 2_000,
    );
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('deleted, the operator unloads it: vLLM lists it no more, answers its name 404, and a second unload counts as done', async () => {
    const pods = [
      {
        name: 'vllm-0',
        url: vllm.url,
        ready: true,
        terminating: false,
        loaded: await loadedAdapters(vllm.url),
      },
    ];
    const unloads = planAdapterRemoval(ADAPTER, { exists: true, runtimeLoading: true, pods });
    expect(unloads).toEqual([{ pod: 'vllm-0', url: vllm.url, body: { lora_name: ADAPTER } }]);
    expect(await applyUnloads(unloads)).toEqual(new Map());
    expect(await loadedAdapters(vllm.url)).toEqual([]);
    const res = await fetch(`${vllm.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: ADAPTER, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
    });
    expect(res.status).toBe(404);
    expect(await res.text()).toContain('does not exist');
    // vLLM's 404 for an adapter it no longer has: what a retried unload meets.
    expect(await applyUnloads(unloads)).toEqual(new Map());
  });
});
