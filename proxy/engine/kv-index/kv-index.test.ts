// Events in, index state out: the simulator publishes vLLM's KV events over real ZMQ sockets on
// loopback, the feed subscribes as the proxy does, and the index is read back — stores, evictions,
// AllBlocksCleared, an endpoint leaving the catalogue, and gaps (replayed, or resynced when not).
import { afterEach, describe, expect, it } from 'vitest';
import type { CatalogueEntry } from '../../../core/catalogue/index.ts';
import { type Simulator, startSimulator } from '../../../engines/simulator/server.ts';
import { EngineHealth } from '../health.ts';
import { EndpointPicker } from '../picker.ts';
import { promptBlockKeys } from './block-keys.ts';
import { KvEventFeed } from './feed.ts';
import { PrefixIndex } from './prefix-index.ts';
import { PrefixRouting } from './prefix-routing.ts';
import { simulatorTokens } from './prompt-tokens.ts';
import { cachedTokens } from './score.ts';

const BLOCK = 4;
const open: { close(): unknown }[] = [];

afterEach(async () => {
  for (const o of open.splice(0)) await o.close();
});

async function engine(o: { replay?: boolean; blocks?: number } = {}): Promise<Simulator> {
  const sim = await startSimulator({
    ttftMs: 0,
    itlMs: 0,
    prefixBlockSize: BLOCK,
    prefixCacheBlocks: o.blocks ?? 1000,
    kvEventsEndpoint: 'tcp://127.0.0.1:*',
    kvEventsReplayEndpoint: o.replay === false ? null : 'tcp://127.0.0.1:*',
  });
  open.push(sim);
  return sim;
}

function entryFor(sims: Simulator[]): CatalogueEntry {
  return {
    id: 'M',
    kind: 'chat',
    aliases: [],
    pricing: {},
    availability: 'available',
    region: 'global',
    tags: [],
    capabilities: { tools: false, vision: false, reasoning: false, edit: false, imageToVideo: false },
    endpoints: sims.map((s) => ({
      url: s.url,
      kvEvents: { url: s.kvEvents!.url, replayUrl: s.kvEvents!.replayUrl ?? undefined, topic: 'kv@m' },
    })),
    ownedBy: 'x',
    created: 0,
    tokenizer: 'simulator',
  };
}

function feedOf(sims: Simulator[]): { index: PrefixIndex; feed: KvEventFeed } {
  const index = new PrefixIndex({ maxBlocksPerModel: 10_000 });
  const feed = new KvEventFeed(index, { warn: () => {} });
  feed.sync([entryFor(sims)]);
  open.push(feed);
  return { index, feed };
}

const messages = (text: string) => [{ role: 'user', content: text }];

async function chat(sim: Simulator, text: string): Promise<number> {
  const res = await fetch(`${sim.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: messages(text), max_tokens: 1 }),
  });
  const body = (await res.json()) as { usage: { prompt_tokens_details: { cached_tokens: number } } };
  return body.usage.prompt_tokens_details.cached_tokens;
}

const keysOf = (text: string) => promptBlockKeys(simulatorTokens({ messages: messages(text) }), BLOCK);

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Sends a throwaway prompt until its blocks show up: the SUB socket has joined. */
async function joined(sim: Simulator, index: PrefixIndex): Promise<void> {
  let n = 0;
  for (;;) {
    const text = `join ${n++} a b c d e f`;
    await chat(sim, text);
    const deadline = Date.now() + 300;
    while (Date.now() < deadline) {
      if ((index.match('m', keysOf(text)).get(sim.url) ?? 0) > 0) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

const PROMPT = 'the quick red fox ran over the lazy dog and then sat down';

describe('prefix index from KV events', () => {
  it('learns the blocks an engine stores, and predicts the cached tokens the engine then reports', async () => {
    const [a, b] = [await engine(), await engine()];
    const { index } = feedOf([a, b]);
    await joined(a, index);
    await joined(b, index);
    await chat(a, PROMPT);
    const keys = keysOf(PROMPT);
    expect(keys.length).toBe(3); // 13 tokens: 3 full blocks
    await until(() => index.match('m', keys).get(a.url) === 3, 'the stored blocks');
    expect(index.match('m', keys).has(b.url)).toBe(false);
    // A longer prompt sharing the first blocks: the index predicts what the engine reports.
    const longer = `${PROMPT} in the sun all day long`;
    const predicted = cachedTokens(
      index.match('m', keysOf(longer)).get(a.url)!,
      BLOCK,
      simulatorTokens({ messages: messages(longer) }).length,
    );
    expect(await chat(a, longer)).toBe(predicted);
    expect(predicted).toBe(12);
  });

  it('forgets evicted blocks, all blocks on AllBlocksCleared, and an endpoint that left the catalogue', async () => {
    const a = await engine({ blocks: 6 });
    const b = await engine();
    const { index, feed } = feedOf([a, b]);
    await joined(a, index);
    await joined(b, index);
    await chat(a, PROMPT);
    await chat(b, PROMPT);
    const keys = keysOf(PROMPT);
    await until(
      () => index.match('m', keys).get(a.url) === 3 && index.match('m', keys).get(b.url) === 3,
      'stores',
    );
    // Six new blocks through a's 6-block LRU: its three PROMPT blocks are evicted.
    await chat(a, 'a b c d e f g h i j k l m n o p q r s t u v w x y');
    await until(() => !index.match('m', keys).has(a.url), 'the evictions');
    expect(index.match('m', keys).get(b.url)).toBe(3);
    await fetch(`${b.url}/reset_prefix_cache`, { method: 'POST' });
    await until(() => !index.match('m', keys).has(b.url), 'AllBlocksCleared');
    await chat(b, PROMPT);
    await until(() => index.match('m', keys).get(b.url) === 3, 'b again');
    feed.sync([entryFor([a])]);
    expect(index.match('m', keys).has(b.url)).toBe(false);
    expect(feed.streams().map((s) => s.endpoint)).toEqual([a.url]);
  });

  it("replays batches lost on the wire from the engine's replay socket", async () => {
    const a = await engine();
    const { index, feed } = feedOf([a]);
    await joined(a, index);
    const replaysBefore = feed.streams()[0]!.replays;
    a.kvEvents!.loseNext();
    await chat(a, PROMPT); // lost on the wire, kept in the engine's replay buffer
    await chat(a, 'another prompt of a few more words');
    await until(() => index.match('m', keysOf(PROMPT)).get(a.url) === 3, 'the replayed blocks');
    expect(feed.streams()[0]).toMatchObject({ resyncs: 0, replays: replaysBefore + 1 });
  });

  it("resyncs (drops the endpoint's blocks) when a gap cannot be replayed", async () => {
    const a = await engine({ replay: false });
    const { index, feed } = feedOf([a]);
    await joined(a, index);
    await chat(a, PROMPT);
    await until(() => index.match('m', keysOf(PROMPT)).get(a.url) === 3, 'stores');
    const resyncsBefore = feed.streams()[0]!.resyncs;
    a.kvEvents!.loseNext(); // say, an eviction of PROMPT's blocks we never hear of
    await chat(a, 'x y z w v u');
    await chat(a, 'one more prompt after the gap');
    await until(() => feed.streams()[0]!.resyncs === resyncsBefore + 1, 'the resync');
    expect(index.match('m', keysOf(PROMPT)).has(a.url)).toBe(false);
    await until(
      () => (index.match('m', keysOf('one more prompt after the gap')).get(a.url) ?? 0) > 0,
      'relearning',
    );
  });
});

describe("the simulator's tokenizer, in the proxy", () => {
  it('gives the token ids the simulator gives for a chat with text parts, tool calls and tool results', async () => {
    const sim = await engine();
    const messages = [
      { role: 'system', content: 'You are terse.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Weather in' },
          { type: 'text', text: 'Paris, café?' },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: '21 °C, clear' },
    ];
    const res = await fetch(`${sim.url}/tokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages }),
    });
    const { tokens } = (await res.json()) as { tokens: number[] };
    expect(tokens.length).toBeGreaterThan(10);
    expect(simulatorTokens({ messages })).toEqual(tokens);
  });
});

describe("routing on the engines' own load (/metrics)", () => {
  it('leaves a warm engine whose queue (sent by another replica, unseen here) outweighs its cache', async () => {
    const [a, b] = [await engine(), await engine()];
    const entry = entryFor([a, b]);
    const routing = (intervalMs: number) => {
      const r = new PrefixRouting({
        // 12 cached tokens save 12 ms; each request ahead costs 20, each waiting one 20 more.
        weights: { prefillUsPerToken: 1000, loadMs: 20, waitingMs: 20, kvFullMs: 0 },
        maxBlocksPerModel: 10_000,
        log: { warn: () => {} },
        metrics: { intervalMs, staleMs: 60_000, inFlight: () => 0 },
        // A loaded test machine may be slow to answer: these picks must see the score.
        tokenize: { budgetMs: 10_000 },
      });
      r.sync([entry]);
      open.push(r);
      return r;
    };
    const [blind, seeing] = [routing(0), routing(20)];
    for (const r of [blind, seeing]) {
      await joined(a, r.index);
      await joined(b, r.index);
    }
    await chat(a, PROMPT); // a holds PROMPT's blocks, b only the join prompts
    await until(
      () => [blind, seeing].every((r) => r.index.match('m', keysOf(PROMPT)).get(a.url) === 3),
      'the stored blocks',
    );
    const longer = messages(`${PROMPT} and then some`);
    const picker = new EndpointPicker(new EngineHealth({ cooldownMs: 5_000 }), { loadFactor: 1.25 });
    const pick = async (r: PrefixRouting) =>
      picker.pick([a.url, b.url], { score: await r.scorer(entry, { messages: longer }) });
    const scored = async (r: PrefixRouting) => (await r.scorer(entry, { messages: longer })) !== undefined;
    await until(async () => (await scored(seeing)) && (await scored(blind)), 'the tokenizers');
    expect(await pick(blind)).toBe(a.url);
    expect(await pick(seeing)).toBe(a.url);

    // Another replica's calls keep a busy: one running, three waiting for its only slot.
    a.setOptions({ maxConcurrency: 1, itlMs: 50 });
    const busy = new AbortController();
    const calls = [1000, 1, 1, 1].map((max_tokens) =>
      fetch(`${a.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: messages('busy'), max_tokens, stream: true }),
        signal: busy.signal,
      }).catch(() => undefined),
    );
    await until(() => seeing.engines!.report(a.url)?.waiting === 3, "a's report of its queue");
    expect(seeing.engines!.report(a.url)).toMatchObject({ running: 1, waiting: 3 });
    expect(await pick(seeing)).toBe(b.url);
    // This replica sees none of it: its count of a's calls is 0, and it keeps sending there.
    expect(await pick(blind)).toBe(a.url);
    // A report past the staleness bound is not used.
    expect(seeing.engines!.report(a.url, performance.now() + 120_000)).toBeUndefined();
    busy.abort();
    await Promise.all(calls);
  });
});

describe('routing when the tokenizer threads are busy', () => {
  it('a full pool routes least-loaded at once, and the call is served; then the index again', async () => {
    const [a, b] = [await engine(), await engine()];
    const entry = entryFor([a, b]);
    const routing = new PrefixRouting({
      // 12 cached tokens save 12 ms; a request in flight costs 5: the warm engine wins while busy.
      weights: { prefillUsPerToken: 1000, loadMs: 5, waitingMs: 0, kvFullMs: 0 },
      maxBlocksPerModel: 10_000,
      log: { warn: () => {} },
      tokenize: { threads: 1, queue: 1, budgetMs: 10_000 },
    });
    routing.sync([entry]);
    open.push(routing);
    await joined(a, routing.index);
    await joined(b, routing.index);
    await chat(a, PROMPT);
    await until(() => routing.index.match('m', keysOf(PROMPT)).get(a.url) === 3, 'the stored blocks');
    const picker = new EndpointPicker(new EngineHealth({ cooldownMs: 5_000 }), { loadFactor: 1.25 });
    const release = picker.acquire(a.url); // a: one call in flight, b: none
    const longer = messages(`${PROMPT} and then some`);
    await until(
      async () => (await routing.scorer(entry, { messages: longer })) !== undefined,
      'the tokenizer',
    );
    expect(picker.pick([a.url, b.url], { score: await routing.scorer(entry, { messages: longer }) })).toBe(
      a.url,
    );

    // Another call's prompt holds the only queue slot: this one is not made to wait for it.
    const pool = routing.threads()!;
    const busy = pool.tokenize('simulator', { messages: messages('word '.repeat(200_000)) });
    const score = await routing.scorer(entry, { messages: longer });
    expect(score).toBeUndefined();
    expect(pool.stats.saturated).toBe(1);
    const url = picker.pick([a.url, b.url], { score });
    expect(url).toBe(b.url); // least-loaded
    expect(await chat(b, `${PROMPT} and then some`)).toBe(0); // served, cold
    release();
    await busy;
    // The slot free again, the index scores once more (b now holds the longer prompt too).
    await until(() => (routing.index.match('m', keysOf(`${PROMPT} and then some`)).get(b.url) ?? 0) > 3, 'b');
    expect(picker.pick([a.url, b.url], { score: await routing.scorer(entry, { messages: longer }) })).toBe(
      b.url,
    );
  });
});
