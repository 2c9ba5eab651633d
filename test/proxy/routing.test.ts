// Prefix-cache routing end to end: four simulator engines publishing KV events over ZMQ, two proxy
// replicas each following them on their own (no shared routing state), the official SDK as client.
// A session's turns, sent through either replica, land on the engine that holds its prefix; a hot
// prefix sent all at once does not pile every call on that engine (the load term wins).
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CatalogueSnapshot } from '../../core/catalogue/index.ts';
import { loadConfig } from '../../core/config/index.ts';
import { type Simulator, startSimulator } from '../../engines/simulator/server.ts';
import { buildProxyApp, type ProxyApp } from '../../proxy/app.ts';
import { runLogStream } from '../helpers/run-log.ts';
import { chatModel, type Harness, startHarness, tempDataDir } from './harness.ts';

const ROUTED = 'Routed/Model';
let sims: Simulator[];
let h: Harness;
let second: { proxy: ProxyApp; snapshot: CatalogueSnapshot; baseURL: string; dataDir: string };

const SYSTEM = `You are a coding agent. ${Array.from({ length: 200 }, (_, i) => `rule${i}`).join(' ')}`;

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const routingOf = (p: ProxyApp) => p.ctx.engine.routing!;
const engineOf = (url: string) => sims.findIndex((s) => s.url === url);
const chatCount = (s: Simulator) => s.received().filter((r) => r.path === '/v1/chat/completions').length;

beforeAll(async () => {
  sims = await Promise.all(
    Array.from({ length: 4 }, () =>
      startSimulator({
        ttftMs: 1,
        itlMs: 0,
        models: [ROUTED],
        kvEventsEndpoint: 'tcp://127.0.0.1:*',
        kvEventsReplayEndpoint: 'tcp://127.0.0.1:*',
      }),
    ),
  );
  const endpoints = sims.map((s) => ({
    url: s.url,
    kvEvents: { url: s.kvEvents!.url, replayUrl: s.kvEvents!.replayUrl!, topic: `kv@${ROUTED}` },
  }));
  h = await startHarness(
    {
      PROXY_ROUTING_PREFILL_US_PER_TOKEN: '100',
      PROXY_ROUTING_LOAD_MS: '20',
      // A loaded test machine may be slow to tokenize: these calls' routing is what is checked.
      PROXY_ROUTING_TOKENIZE_BUDGET_MS: '10000',
    },
    {
      entries: () => [{ ...chatModel(ROUTED, []), tokenizer: 'simulator' }],
      engines: { [ROUTED]: endpoints },
    },
  );
  // A second replica of the proxy: its own catalogue snapshot, its own index, the same Redis.
  const r = h.redis.client();
  const snapshot = new CatalogueSnapshot(r, { subscriber: h.redis.client(), refreshMs: 60_000 });
  await snapshot.start();
  const dataDir = tempDataDir();
  const proxy = await buildProxyApp({
    config: loadConfig({ ...process.env, ...configEnv(h), PROXY_DATA_DIR: dataDir }),
    redis: r,
    subscriber: h.redis.client(),
    catalogue: snapshot,
    logger: { level: 'info' },
    logStream: runLogStream('proxy-2'),
  });
  await proxy.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = proxy.app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  second = { proxy, snapshot, baseURL: `http://127.0.0.1:${port}/v1`, dataDir };
  // Both replicas' SUB sockets have joined once an event reaches each (earlier ones are replayed).
  for (let i = 0; ; i++) {
    await h.client().chat.completions.create({
      model: ROUTED,
      messages: [
        {
          role: 'user',
          content: `warm up ${i} ${randomBytes(4).toString('hex')} a b c d e f g h i j k l m n o p q r`,
        },
      ],
      max_tokens: 1,
    });
    await new Promise((res) => setTimeout(res, 50));
    if (
      routingOf(h.proxy).index.stats('routed/model').blocks > 0 &&
      routingOf(proxy).index.stats('routed/model').blocks > 0
    )
      break;
    if (i > 200) throw new Error('the replicas never received KV events');
  }
});

afterAll(async () => {
  if (second) {
    const closing = second.proxy.app.close();
    second.proxy.app.server.closeAllConnections();
    await closing;
    second.snapshot.stop();
    rmSync(second.dataDir, { recursive: true, force: true });
  }
  await h?.stop();
  await Promise.all((sims ?? []).map((s) => s.close()));
});

/** The harness's config as env strings, so the second replica is configured the same. */
function configEnv(harness: Harness): Record<string, string> {
  return {
    REDIS_URL: harness.config.REDIS_URL,
    MEDIA_DIR: harness.config.MEDIA_DIR,
    MODELPLANE_KEK: harness.config.MODELPLANE_KEK,
    LOG_LEVEL: 'silent',
    PROXY_ROUTING_PREFILL_US_PER_TOKEN: '100',
    PROXY_ROUTING_LOAD_MS: '20',
    PROXY_ROUTING_TOKENIZE_BUDGET_MS: '10000',
  };
}

describe('prefix-cache routing', () => {
  it("sends a session's turns, through either replica, to the engine holding its prefix", async () => {
    const replicas = [
      { proxy: h.proxy, client: h.client() },
      {
        proxy: second.proxy,
        client: new OpenAI({ apiKey: h.secret, baseURL: second.baseURL, maxRetries: 0 }),
      },
    ];
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: `${SYSTEM} session one` },
    ];
    const served: number[] = [];
    const cached: number[] = [];
    for (let turn = 0; turn < 6; turn++) {
      messages.push({ role: 'user', content: `turn ${turn}: look at file${turn}.ts and fix it` });
      const { proxy, client } = replicas[turn % 2]!;
      const before = sims.map(chatCount);
      // The other replica learns of the last turn's blocks from the engine's events, asynchronously:
      // a real session's turns are seconds apart.
      if (turn > 0) {
        const entry = proxy.ctx.catalogue.get(ROUTED)!;
        await until(
          async () => ((await routingOf(proxy).predict(entry, { messages }))?.cached.size ?? 0) > 0,
          `turn ${turn}'s prefix in replica ${turn % 2}'s index`,
        );
      }
      const res = await client.chat.completions.create({ model: ROUTED, messages, max_tokens: 4 });
      served.push(sims.findIndex((s, i) => chatCount(s) > before[i]!));
      cached.push(res.usage?.prompt_tokens_details?.cached_tokens ?? 0);
      messages.push({ role: 'assistant', content: res.choices[0]!.message.content ?? '' });
    }
    expect(new Set(served).size).toBe(1);
    // From the second turn on, the whole system prompt and history before the turn come from cache.
    expect(cached[0]).toBe(0);
    for (const c of cached.slice(1)) expect(c).toBeGreaterThan(200);
  });

  it('spreads a hot prefix once the warm engine is loaded (the load term wins past a threshold)', async () => {
    const hot = `${SYSTEM} hot prefix`;
    const client = h.client();
    await client.chat.completions.create({
      model: ROUTED,
      messages: [
        { role: 'system', content: hot },
        { role: 'user', content: 'first' },
      ],
      max_tokens: 1,
    });
    const entry = h.proxy.ctx.catalogue.get(ROUTED)!;
    const probe = {
      messages: [
        { role: 'system', content: hot },
        { role: 'user', content: 'x' },
      ],
    };
    await until(
      async () => ((await routingOf(h.proxy).predict(entry, probe))?.cached.size ?? 0) > 0,
      'the hot prefix indexed',
    );
    const warm = [...(await routingOf(h.proxy).predict(entry, probe))!.cached.keys()][0]!;
    for (const s of sims) s.setOptions({ ttftMs: 300 }); // calls overlap: each one is load
    const before = sims.map(chatCount);
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        client.chat.completions.create({
          model: ROUTED,
          messages: [
            { role: 'system', content: hot },
            { role: 'user', content: `question ${i}` },
          ],
          max_tokens: 1,
        }),
      ),
    );
    for (const s of sims) s.setOptions({ ttftMs: 1 });
    const got = sims.map((s, i) => chatCount(s) - before[i]!);
    // ~250 uncached tokens cost 25 ms of prefill, one call in flight 20 ms: the warm engine takes
    // the first two, then the others share (each warm too once its first call's blocks are
    // published) — not all twelve on one engine.
    expect(got[engineOf(warm)]).toBeGreaterThanOrEqual(2);
    expect(Math.max(...got)).toBeLessThan(12);
    expect(got.filter((n) => n > 0).length).toBeGreaterThan(1);
  });
});
