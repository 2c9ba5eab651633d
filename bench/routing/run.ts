// Routing benchmark (issue 33): four simulator engines whose TTFT pays for uncached prompt tokens
// and whose KV events the prefix index follows; the proxy's own picker (proxy/engine/picker.ts) and
// prefix routing (proxy/engine/kv-index/) choose the engine, in this process — the routing decision
// is the only thing that differs between the policies, so the proxy's HTTP, auth and billing are
// left out. Per policy and workload: TTFT p50/p99 (non-streamed, one output token, no decode time),
// prompt tokens prefilled, cache hit rate, and per routed request the event loop's own time
// (serialize, block keys, match) and the wait for the tokenizer thread (PROXY_ROUTING_TOKENIZE_*
// defaults: 2 threads, 50 ms budget).
//   node --import tsx bench/routing/run.ts [--sessions 24] [--turns 6]
import { parseArgs } from 'node:util';
import type { CatalogueEntry } from '../../core/catalogue/index.ts';
import { type Simulator, startSimulator } from '../../engines/simulator/server.ts';
import { EngineHealth } from '../../proxy/engine/health.ts';
import { PrefixRouting } from '../../proxy/engine/kv-index/prefix-routing.ts';
import { affinityKeyOf, EndpointPicker } from '../../proxy/engine/picker.ts';

const { values } = parseArgs({
  options: { sessions: { type: 'string' }, turns: { type: 'string' } },
});
const SESSIONS = Number(values.sessions ?? 24);
const TURNS = Number(values.turns ?? 6);
const MODEL = 'bench';

type Policy = 'round-robin' | 'least-loaded' | 'char-hash' | 'kv-index';
type Message = { role: string; content: string };

const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i % 97}`).join(' ');

/** One session: the messages of each turn, the previous turns' answers folded in as they come. */
interface Workload {
  name: string;
  system: (s: number) => string;
  turnWords: number;
}

const workloads: Workload[] = [
  // Agent: a long system prompt + tool descriptions shared by every session, growing histories.
  { name: 'agent', system: () => `agent ${words(3000, 'x')}`, turnWords: 300 },
  // Chat: a short system prompt, each session its own conversation.
  { name: 'chat', system: (s) => `chat ${s} ${words(60, 'c')}`, turnWords: 80 },
];

interface Sample {
  ttftMs: number;
  prompt: number;
  cached: number;
}

async function runPolicy(policy: Policy, w: Workload) {
  const sims: Simulator[] = await Promise.all(
    Array.from({ length: 4 }, () =>
      startSimulator({
        ttftMs: 2,
        itlMs: 0,
        maxConcurrency: 4,
        prefillMsPer1kTokens: 40,
        prefixBlockSize: 16,
        models: [MODEL],
        kvEventsEndpoint: 'tcp://127.0.0.1:*',
        kvEventsReplayEndpoint: 'tcp://127.0.0.1:*',
      }),
    ),
  );
  const entry: CatalogueEntry = {
    id: MODEL,
    kind: 'chat',
    aliases: [],
    pricing: {},
    availability: 'available',
    region: 'global',
    tags: [],
    capabilities: { tools: false, vision: false, reasoning: false, edit: false, imageToVideo: false },
    endpoints: sims.map((s) => ({
      url: s.url,
      kvEvents: { url: s.kvEvents!.url, replayUrl: s.kvEvents!.replayUrl!, topic: `kv@${MODEL}` },
    })),
    ownedBy: 'bench',
    created: 0,
    tokenizer: 'simulator',
  };
  const picker = new EndpointPicker(new EngineHealth({ cooldownMs: 5_000 }), { loadFactor: 1.25 });
  const routing = new PrefixRouting({
    weights: { prefillUsPerToken: 40, loadMs: 30, waitingMs: 30, kvFullMs: 0 },
    maxBlocksPerModel: 1_000_000,
    log: { warn: () => {} },
  });
  if (policy === 'kv-index') routing.sync([entry]);
  const urls = sims.map((s) => s.url);
  let rr = 0;
  await new Promise((r) => setTimeout(r, 200)); // the SUB sockets join
  const samples: Sample[] = [];

  const send = async (messages: Message[]): Promise<string> => {
    let url: string;
    if (policy === 'round-robin') url = urls[rr++ % urls.length]!;
    else if (policy === 'char-hash')
      url = picker.pick(urls, { affinityKey: affinityKeyOf(JSON.stringify(messages), 2048) })!;
    else if (policy === 'kv-index')
      url = picker.pick(urls, { score: await routing.scorer(entry, { messages }) })!;
    else url = picker.pick(urls)!;
    const release = picker.acquire(url);
    const started = performance.now();
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages, max_tokens: 1 }),
    });
    const body = (await res.json()) as {
      choices: { message: { content: string } }[];
      usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
    };
    release();
    samples.push({
      ttftMs: performance.now() - started,
      prompt: body.usage.prompt_tokens,
      cached: body.usage.prompt_tokens_details.cached_tokens,
    });
    return body.choices[0]!.message.content;
  };

  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, s) => {
      await new Promise((r) => setTimeout(r, s * 15)); // sessions start spread out
      const messages: Message[] = [{ role: 'system', content: w.system(s) }];
      for (let t = 0; t < TURNS; t++) {
        messages.push({ role: 'user', content: `s${s} t${t} ${words(w.turnWords, `u${s}t${t}q`)}` });
        messages.push({ role: 'assistant', content: await send(messages) });
        await new Promise((r) => setTimeout(r, 30)); // think time
      }
    }),
  );
  const pool = routing.threads()?.stats;
  routing.close();
  await Promise.all(sims.map((s) => s.close()));
  const ttft = samples.map((x) => x.ttftMs).sort((a, b) => a - b);
  const q = (p: number) => ttft[Math.min(ttft.length - 1, Math.floor(p * ttft.length))]!;
  const prompt = samples.reduce((n, x) => n + x.prompt, 0);
  const cached = samples.reduce((n, x) => n + x.cached, 0);
  return {
    policy,
    workload: w.name,
    requests: samples.length,
    ttftP50: q(0.5),
    ttftP99: q(0.99),
    prefilled: prompt - cached,
    hitRate: cached / prompt,
    // The event loop's own time per routed request, and the wait for a tokenizer thread's answer.
    loopUs: (routing.cost.loopMs * 1000) / Math.max(1, routing.cost.requests),
    waitUs: (routing.cost.waitMs * 1000) / Math.max(1, routing.cost.requests),
    // Requests routed without the index because the threads were full or late.
    fellBack: pool ? pool.saturated + pool.late + pool.failed : 0,
  };
}

const rows = [];
for (const w of workloads)
  for (const p of ['round-robin', 'least-loaded', 'char-hash', 'kv-index'] as Policy[])
    rows.push(await runPolicy(p, w));
console.log(
  '| workload | policy | requests | TTFT p50 ms | TTFT p99 ms | prompt tokens prefilled | cache hit rate | event loop µs/request | tokens wait µs | fell back |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  const routed = r.policy === 'kv-index';
  console.log(
    `| ${r.workload} | ${r.policy} | ${r.requests} | ${r.ttftP50.toFixed(1)} | ${r.ttftP99.toFixed(1)} | ${r.prefilled} | ${(r.hitRate * 100).toFixed(1)}% | ${routed ? r.loopUs.toFixed(0) : '—'} | ${routed ? r.waitUs.toFixed(0) : '—'} | ${routed ? r.fellBack : '—'} |`,
  );
}
process.exit(0);
