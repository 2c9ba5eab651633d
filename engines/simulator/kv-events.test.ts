// The simulator's KV events on the wire vLLM uses: a real ZMQ subscriber and DEALER (replay) on
// loopback, payloads decoded with a msgpack library, checked against what the HTTP side says
// (/tokenize's token ids, usage's cached_tokens).
import { decode } from '@msgpack/msgpack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dealer, Subscriber } from 'zeromq';
import { type Simulator, startSimulator } from './server.ts';

interface Batch {
  ts: number;
  events: Array<Record<string, unknown>>;
}

let sim: Simulator;
let sub: Subscriber;
const received: Array<{ topic: string; seq: bigint; batch: Batch }> = [];

async function waitFor<T>(check: () => T | undefined, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function chat(content: string): Promise<{ prompt_tokens: number; cached: number }> {
  const res = await fetch(`${sim.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }], max_tokens: 2 }),
  });
  const body = (await res.json()) as {
    usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
  };
  return { prompt_tokens: body.usage.prompt_tokens, cached: body.usage.prompt_tokens_details.cached_tokens };
}

beforeAll(async () => {
  sim = await startSimulator({
    ttftMs: 0,
    itlMs: 0,
    prefixBlockSize: 4,
    prefixCacheBlocks: 6,
    kvEventsEndpoint: 'tcp://127.0.0.1:*',
    kvEventsReplayEndpoint: 'tcp://127.0.0.1:*',
  });
  sub = new Subscriber();
  sub.connect(sim.kvEvents!.url);
  sub.subscribe('kv@');
  void (async () => {
    for await (const [topic, seq, payload] of sub) {
      received.push({
        topic: topic!.toString(),
        seq: seq!.readBigInt64BE(0),
        batch: decode(payload!) as Batch,
      });
    }
  })().catch(() => {});
  // A PUB socket drops what it sends before the subscription reaches it: publish until one arrives.
  await waitFor(() => {
    void chat('warm up the subscription');
    return received.length > 0 ? true : undefined;
  });
  await fetch(`${sim.url}/reset_prefix_cache`, { method: 'POST' });
  await waitFor(() => (received.at(-1)?.batch.events[0]?.type === 'AllBlocksCleared' ? true : undefined));
  received.length = 0;
});

afterAll(async () => {
  sub?.close();
  await sim?.close();
});

describe('simulator KV events', () => {
  it('publishes the prompt blocks it stores, with the token ids /tokenize gives, chained by parent', async () => {
    // Ten words of at most 4 letters: ten tokens, two full blocks of 4.
    const text = 'one two tri four five six sev ate nine ten';
    const first = await chat(text);
    expect(first.cached).toBe(0);
    const tok = (await (
      await fetch(`${sim.url}/tokenize`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: text }] }),
      })
    ).json()) as { tokens: number[] };
    const stored = await waitFor(() => {
      const events = received.flatMap((r) => r.batch.events).filter((e) => e.type === 'BlockStored');
      return events.length >= 2 ? events : undefined;
    });
    expect(received[0]!.topic).toBe('kv@m');
    expect(stored.map((e) => e.token_ids)).toEqual([tok.tokens.slice(0, 4), tok.tokens.slice(4, 8)]);
    expect(stored[0]).toMatchObject({ parent_block_hash: null, block_size: 4, medium: 'GPU', lora_id: null });
    expect(stored[1]!.parent_block_hash).toBe((stored[0]!.block_hashes as number[])[0]);
    // The same prompt again: its two full blocks are cached (8 of its 10 tokens) and nothing is new.
    const before = received.length;
    expect((await chat(text)).cached).toBe(8);
    await new Promise((r) => setTimeout(r, 100));
    expect(received.length).toBe(before);
  });

  it('publishes what the LRU evicts, and AllBlocksCleared on a reset', async () => {
    received.length = 0;
    // 5 new blocks (21 one-token words) into a 6-block LRU already holding 2: the first one goes.
    await chat('a b c d e f g h i j k l m n o p q r s t u');
    const removed = await waitFor(() =>
      received.flatMap((r) => r.batch.events).find((e) => e.type === 'BlockRemoved'),
    );
    expect((removed.block_hashes as number[]).length).toBe(1);
    await fetch(`${sim.url}/reset_prefix_cache`, { method: 'POST' });
    await waitFor(() => (received.at(-1)?.batch.events[0]?.type === 'AllBlocksCleared' ? true : undefined));
  });

  it('replays buffered batches from a sequence number over the ROUTER socket, then the end marker', async () => {
    const dealer = new Dealer();
    dealer.connect(sim.kvEvents!.replayUrl!);
    const start = Buffer.alloc(8);
    start.writeBigInt64BE(1n);
    await dealer.send(['', start]);
    const seqs: bigint[] = [];
    for (;;) {
      const [, seq, payload] = await dealer.receive();
      const n = seq!.readBigInt64BE(0);
      if (n === -1n) {
        expect(payload!.length).toBe(0);
        break;
      }
      expect((decode(payload!) as Batch).events.length).toBeGreaterThan(0);
      seqs.push(n);
    }
    dealer.close();
    expect(seqs[0]).toBe(1n);
    expect(seqs).toEqual(seqs.map((_, i) => BigInt(i + 1)));
    expect(seqs.length).toBe(sim.kvEvents!.nextSeq - 1);
  });
});
