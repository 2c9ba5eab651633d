import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCli } from './main.ts';
import { type Simulator, startSimulator } from './server.ts';

let sim: Simulator;
let client: OpenAI;

beforeAll(async () => {
  sim = await startSimulator({ ttftMs: 1, itlMs: 0, models: ['alpha', 'org/beta'] });
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
afterAll(() => sim.close());

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A raw streaming request we can read a little of and then hang up on. */
async function openStream(model: string, maxTokens: number, itlMs: number) {
  const controller = new AbortController();
  const res = await fetch(`${sim.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-sim-itl-ms': String(itlMs) },
    body: JSON.stringify({
      model,
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: maxTokens,
      ignore_eos: true,
      stream: true,
    }),
    signal: controller.signal,
  });
  const reader = res.body!.getReader();
  await reader.read();
  return {
    readSome: async (n: number) => {
      for (let i = 0; i < n; i++) await reader.read();
    },
    abort: () => {
      controller.abort();
      reader.cancel().catch(() => {});
    },
  };
}

const metricValue = (text: string, name: string, model: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{engine="0",model_name="${model}"}`));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
};

describe('simulator server', () => {
  it('lists configured models, answers /health, 404s unknown routes and 405s wrong methods', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['alpha', 'org/beta']);
    expect((await client.models.retrieve('org/beta')).id).toBe('org/beta');
    expect((await fetch(`${sim.url}/health`)).status).toBe(200);
    const missing = await fetch(`${sim.url}/v1/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: 'not_found' } });
    expect((await fetch(`${sim.url}/v1/chat/completions`)).status).toBe(405);
  });

  it('/metrics: Prometheus text with vLLM 0.32 names labelled engine and model_name', async () => {
    await client.chat.completions.create({
      model: 'org/beta',
      messages: [{ role: 'user', content: 'count me' }],
      max_tokens: 4,
    });
    const res = await fetch(`${sim.url}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0.0.4/);
    const text = await res.text();
    for (const name of [
      'vllm:num_requests_running',
      'vllm:num_requests_waiting',
      'vllm:kv_cache_usage_perc',
    ]) {
      expect(text).toContain(`# TYPE ${name} gauge`);
      expect(metricValue(text, name, 'alpha')).toBe(0);
    }
    expect(text).toContain('# TYPE vllm:prompt_tokens_total counter');
    expect(metricValue(text, 'vllm:prompt_tokens_total', 'org/beta')).toBe(3);
    expect(metricValue(text, 'vllm:generation_tokens_total', 'org/beta')).toBe(4);
    expect(text).toContain(
      'vllm:request_success_total{engine="0",finished_reason="length",model_name="org/beta"} 1',
    );
    expect(text).not.toContain('vllm:gpu_cache_usage_perc'); // gone in vLLM 0.32: kv_cache_usage_perc
  });

  it('max concurrency: requests beyond it wait (counted as waiting) and run once slots free up', async () => {
    sim.setOptions({ maxConcurrency: 2 });
    // Two long streams hold both slots until we hang up on them.
    const blockers = await Promise.all([0, 1].map(() => openStream('conc', 1000, 50)));
    const waiting = [0, 1, 2].map(() =>
      client.chat.completions.create({
        model: 'conc',
        messages: [{ role: 'user', content: 'x' }],
        max_tokens: 2,
      }),
    );
    await waitFor(() => sim.stats().waiting === 3);
    const text = await (await fetch(`${sim.url}/metrics`)).text();
    expect(metricValue(text, 'vllm:num_requests_running', 'conc')).toBe(2);
    expect(metricValue(text, 'vllm:num_requests_waiting', 'conc')).toBe(3);
    expect(metricValue(text, 'vllm:kv_cache_usage_perc', 'conc')).toBeGreaterThan(0);
    for (const b of blockers) b.abort();
    const done = await Promise.all(waiting);
    expect(done.every((r) => r.usage!.completion_tokens === 2)).toBe(true);
    expect(sim.stats()).toMatchObject({ running: 0, waiting: 0, peakRunning: 2 });
    sim.setOptions({ maxConcurrency: Number.POSITIVE_INFINITY });
  });

  it('a client disconnect stops generation, frees the slot and is counted', async () => {
    const before = sim.stats();
    const stream = await openStream('m', 500, 5);
    await stream.readSome(3);
    stream.abort();
    await waitFor(() => sim.stats().aborted === before.aborted + 1 && sim.stats().running === 0);
    expect(sim.stats().generationTokens - before.generationTokens).toBeLessThan(100);
  });

  it('records what it received, for tests of a proxy in front of it', async () => {
    await client.embeddings.create({ model: 'e', input: 'hello' }, { headers: { 'x-trace': 't1' } });
    const last = sim.received().at(-1)!;
    expect(last).toMatchObject({
      method: 'POST',
      path: '/v1/embeddings',
      json: { model: 'e', input: 'hello' },
    });
    expect(last.headers['x-trace']).toBe('t1');
  });

  it('CLI flags map onto options', () => {
    const parsed = parseCli([
      '--port',
      '9001',
      '--ttft-ms',
      '20',
      '--fail-mid-stream',
      '0.1',
      '--max-concurrency',
      '0',
      '--models',
      'a, b',
    ]);
    expect(parsed).toEqual({
      port: 9001,
      host: '127.0.0.1',
      options: {
        ttftMs: 20,
        failMidStream: 0.1,
        maxConcurrency: Number.POSITIVE_INFINITY,
        models: ['a', 'b'],
      },
    });
    expect(parseCli(['--help'])).toBeNull();
    expect(() => parseCli(['--ttft-ms', 'soon'])).toThrow(/--ttft-ms/);
  });
});
