// The Responses API past create/get/delete (issue 39), through openai-node 7 (the `openai-v7`
// alias) against the real proxy, Redis and simulator engines: input items and their cursor pages,
// the usage details the SDK types promise, reasoning carried as reasoning items, and background
// responses (poll, cancel, replay from a sequence number), each billed exactly once.
import OpenAI from 'openai-v7';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, chatModel, type Harness, startHarness } from './harness.ts';

const THINKING_MODEL = 'Org/Thinking-Chat';

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    {},
    {
      entries: (endpoints) => [chatModel(THINKING_MODEL, endpoints, { tools: true, reasoning: true })],
    },
  );
});
afterAll(async () => {
  await h?.stop();
});

const v7 = (secret = h.secret) => new OpenAI({ apiKey: secret, baseURL: h.baseURL, maxRetries: 0 });

describe('Responses: input items', () => {
  it('responses.inputItems.list: the chain’s earlier turns and this input, as ResponseItems with ids; cursor pages in either order; after an unknown id is a 400; another account’s response a 404', async () => {
    const a = await h.newAccount();
    const c = v7(a.secret);
    const first = await c.responses.create({
      model: CHAT_MODEL,
      input: [
        { role: 'developer', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'input_text', text: 'My name is Ada.' }] },
      ],
      max_output_tokens: 8,
    });
    const second = await c.responses.create({
      model: CHAT_MODEL,
      input: 'What is my name?',
      previous_response_id: first.id,
      max_output_tokens: 8,
    });
    const all: OpenAI.Responses.ResponseItem[] = [];
    for await (const item of c.responses.inputItems.list(second.id, { limit: 2, order: 'asc' }))
      all.push(item);
    // developer, user, the first answer's message, then this turn's user message
    expect(all.map((i) => [i.type, (i as { role?: string }).role])).toEqual([
      ['message', 'developer'],
      ['message', 'user'],
      ['message', 'assistant'],
      ['message', 'user'],
    ]);
    expect(all[2]!.id).toBe(first.output[0]!.id);
    expect(all[3]).toMatchObject({
      status: 'completed',
      content: [{ type: 'input_text', text: 'What is my name?' }],
    });
    expect(new Set(all.map((i) => i.id)).size).toBe(4);
    // desc (the default): the same items, last first; one page holds what `limit` allows
    const page = await c.responses.inputItems.list(second.id, { limit: 3 });
    expect(page.data.map((i) => i.id)).toEqual(
      all
        .slice(1)
        .reverse()
        .map((i) => i.id),
    );
    expect(page.has_more).toBe(true);
    const rest = await c.responses.inputItems.list(second.id, { limit: 3, after: page.data[2]!.id });
    expect(rest.data.map((i) => i.id)).toEqual([all[0]!.id]);
    expect(rest.has_more).toBe(false);
    // ids are stable: the same call gives the same ids
    const again = await c.responses.inputItems.list(second.id, {
      order: 'asc',
      include: ['message.input_image.image_url'],
    });
    expect(again.data.map((i) => i.id)).toEqual(all.map((i) => i.id));
    await expect(c.responses.inputItems.list(second.id, { after: 'msg_nope' })).rejects.toMatchObject({
      status: 400,
      param: 'after',
    });
    await expect(v7().responses.inputItems.list(second.id)).rejects.toMatchObject({ status: 404 });
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});

/** Runs `fn` with the simulators set to `options`, then back to `undo`. */
async function withSims<T>(
  options: Record<string, unknown>,
  undo: Record<string, unknown>,
  fn: () => Promise<T>,
) {
  for (const s of h.sims) s.setOptions(options);
  try {
    return await fn();
  } finally {
    for (const s of h.sims) s.setOptions(undo);
  }
}

/** A raw stream's events, parsed, each checked to name its type on the event: line. */
function eventsOf(text: string): Record<string, unknown>[] {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((block) => {
      const [ev, data] = block.split('\n');
      const e = JSON.parse(data!.slice('data: '.length)) as Record<string, unknown>;
      expect(ev).toBe(`event: ${e.type}`);
      return e;
    });
}

async function rawStream(
  body: Record<string, unknown>,
  secret = h.secret,
): Promise<Record<string, unknown>[]> {
  const res = await fetch(`${h.baseURL}/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  expect(res.status).toBe(200);
  return eventsOf(await res.text());
}

describe('Responses: usage as the SDK types promise it', () => {
  it('cache_write_tokens (0: engines report no cache writes) on every finished response, streamed or not, and on GET', async () => {
    const c = v7();
    const r = await c.responses.create({ model: CHAT_MODEL, input: 'Hi', max_output_tokens: 8 });
    expect(r.usage!.input_tokens_details).toEqual({
      cached_tokens: expect.any(Number),
      cache_write_tokens: 0,
    });
    expect((await c.responses.retrieve(r.id)).usage).toEqual(r.usage);
    const final = await c.responses
      .stream({ model: CHAT_MODEL, input: 'Hi', max_output_tokens: 8, store: false })
      .finalResponse();
    expect(final.usage!.input_tokens_details.cache_write_tokens).toBe(0);
  });

  it('reasoning_tokens: the engine’s count when it reports one (0 when it does not), streamed or not, as billed', async () => {
    const a = await h.newAccount();
    const c = v7(a.secret);
    const body = {
      model: THINKING_MODEL,
      input: 'Think first',
      reasoning: { effort: 'high' as const },
      max_output_tokens: 120,
      store: false,
    };
    const unreported = await c.responses.create(body);
    expect(unreported.output[0]!.type).toBe('reasoning');
    expect(unreported.usage!.output_tokens_details.reasoning_tokens).toBe(0);
    await withSims({ reasoningTokensInUsage: true }, { reasoningTokensInUsage: false }, async () => {
      const r = await c.responses.create(body);
      const reasoning = r.usage!.output_tokens_details.reasoning_tokens;
      expect(reasoning).toBeGreaterThan(0);
      expect(reasoning).toBeLessThan(r.usage!.output_tokens);
      const streamed = await c.responses.stream(body).finalResponse();
      expect(streamed.usage!.output_tokens_details.reasoning_tokens).toBeGreaterThan(0);
      expect(streamed.usage!.output_tokens_details.reasoning_tokens).toBeLessThan(
        streamed.usage!.output_tokens,
      );
    });
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('response.failed carries the usage of what was generated, equal to what the ledger charged (not null)', async () => {
    const a = await h.newAccount();
    const events = await withSims({ failMidStream: 1 }, { failMidStream: 0 }, () =>
      rawStream(
        { model: CHAT_MODEL, input: 'Tell me a long story', max_output_tokens: 40, store: false },
        a.secret,
      ),
    );
    const failed = events.at(-1) as {
      type: string;
      response: OpenAI.Responses.Response & { usage: { cost: string } };
    };
    expect(failed.type).toBe('response.failed');
    await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec!.outputTokens).toBeGreaterThan(0);
    expect(failed.response.usage).toMatchObject({
      input_tokens: rec!.inputTokens,
      output_tokens: rec!.outputTokens,
      input_tokens_details: { cached_tokens: rec!.cachedTokens, cache_write_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: rec!.inputTokens! + rec!.outputTokens!,
    });
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});

describe('Responses: reasoning carried as reasoning items', () => {
  it('a thinking model’s reasoning is a reasoning item with reasoning_text content; with a summary asked for, its summary too — streamed (the summary and reasoning_text events) and stored', async () => {
    const c = v7();
    const body = {
      model: THINKING_MODEL,
      input: 'Think, then answer',
      reasoning: { effort: 'low' as const, summary: 'auto' as const },
      max_output_tokens: 120,
    };
    const whole = await c.responses.create(body);
    const item = whole.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(item.type).toBe('reasoning');
    const thought = item.content![0]!.text;
    expect(thought.length).toBeGreaterThan(0);
    expect(item.summary).toEqual([{ type: 'summary_text', text: thought }]);
    expect((await c.responses.retrieve(whole.id)).output[0]).toEqual(item);

    const events = await rawStream(body);
    const types = events.map((e) => e.type);
    const order = [
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.content_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_text.delta',
      'response.reasoning_text.done',
      'response.content_part.done',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
    ];
    let at = 0;
    for (const t of order) {
      at = types.indexOf(t, at);
      expect(at, t).toBeGreaterThan(-1);
    }
    const summaryDeltas = events
      .filter((e) => e.type === 'response.reasoning_summary_text.delta')
      .map((e) => e.delta);
    const textDeltas = events.filter((e) => e.type === 'response.reasoning_text.delta').map((e) => e.delta);
    expect(summaryDeltas).toEqual(textDeltas);
    const done = events.find((e) => e.type === 'response.completed') as {
      response: OpenAI.Responses.Response;
    };
    const streamed = done.response.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(streamed.summary[0]!.text).toBe(textDeltas.join(''));
    expect(streamed.content![0]!.text).toBe(textDeltas.join(''));
    expect((await c.responses.retrieve(done.response.id)).output[0]).toEqual(streamed);

    // The SDK's stream helper accumulates the same item.
    const final = await c.responses.stream({ ...body, store: false }).finalResponse();
    const acc = final.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(acc.summary[0]!.text).toBe(acc.content![0]!.text);
    // Without a summary asked for: content only, summary empty (as OpenAI gives it).
    const plain = await c.responses.create({ ...body, reasoning: { effort: 'low' }, store: false });
    expect((plain.output[0] as OpenAI.Responses.ResponseReasoningItem).summary).toEqual([]);
  });
});

describe('Responses: background', () => {
  const poll = async (c: OpenAI, id: string, until: (r: OpenAI.Responses.Response) => boolean) => {
    for (let i = 0; i < 400; i++) {
      const r = await c.responses.retrieve(id);
      if (until(r)) return r;
      await new Promise((res) => setTimeout(res, 25));
    }
    throw new Error(`response ${id} never reached the state`);
  };
  const ended = (r: OpenAI.Responses.Response) =>
    ['completed', 'incomplete', 'failed', 'cancelled'].includes(r.status!);

  it('background: true answers queued at once; GET polls it to completed; its events replay from any sequence number (responses.retrieve with stream: true, starting_after); billed once', async () => {
    const a = await h.newAccount();
    const c = v7(a.secret);
    const queued = await c.responses.create({
      model: CHAT_MODEL,
      input: 'Tell me a story',
      max_output_tokens: 30,
      background: true,
    });
    expect(queued.status).toBe('queued');
    expect(queued.background).toBe(true);
    expect(queued.usage).toBeUndefined();
    const done = await poll(c, queued.id, ended);
    expect(done.status).toMatch(/completed|incomplete/);
    expect(done.output_text.length).toBeGreaterThan(0);
    expect(done.usage!.input_tokens_details.cache_write_tokens).toBe(0);

    const all: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const ev of await c.responses.retrieve(queued.id, { stream: true })) all.push(ev);
    expect(all.map((e) => e.sequence_number)).toEqual(all.map((_e, i) => i));
    expect(all[0]!.type).toBe('response.created');
    const last = all.at(-1)!;
    expect(last.type).toMatch(/response\.(completed|incomplete)/);
    const { output_text: _added, ...stored } = done; // output_text: added by the SDK
    expect((last as OpenAI.Responses.ResponseCompletedEvent).response).toEqual(stored);
    const from = 4;
    const rest: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const ev of await c.responses.retrieve(queued.id, { stream: true, starting_after: from }))
      rest.push(ev);
    expect(rest).toEqual(all.slice(from + 1));

    await h.settled(a.accountId);
    const charges = (await usageRecords(h.redis.client(), a.accountId, { count: 10 })).filter(
      (r) => r.type === 'charge',
    );
    expect(charges).toHaveLength(1);
    expect(charges[0]!.outputTokens).toBe(done.usage!.output_tokens);
    expect(charges[0]!.inputTokens).toBe(done.usage!.input_tokens);
    // Cancelling one that ended returns it as it is; a response not run in background cannot be cancelled.
    expect((await c.responses.cancel(queued.id)).status).toBe(done.status);
    const fg = await c.responses.create({ model: CHAT_MODEL, input: 'x', max_output_tokens: 4 });
    await expect(c.responses.cancel(fg.id)).rejects.toMatchObject({ status: 400 });
    await expect(
      c.responses.create({ model: CHAT_MODEL, input: 'x', background: true, store: false }),
    ).rejects.toMatchObject({ status: 400, param: 'background' });
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('background with stream: true streams its events as they are made, the same a replay gives', async () => {
    const c = v7();
    const stream = await c.responses.create({
      model: CHAT_MODEL,
      input: 'Stream it',
      max_output_tokens: 20,
      background: true,
      stream: true,
    });
    const live: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const ev of stream) live.push(ev);
    expect(live.at(-1)!.type).toMatch(/response\.(completed|incomplete)/);
    const id = (live[0] as OpenAI.Responses.ResponseCreatedEvent).response.id;
    const again: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const ev of await c.responses.retrieve(id, { stream: true })) again.push(ev);
    expect(again).toEqual(live);
  });

  it('responses.cancel mid-generation: status cancelled with the output so far; billed once for what was generated, as its usage says', async () => {
    const a = await h.newAccount();
    const c = v7(a.secret);
    const r = await withSims({ itlMs: 20 }, { itlMs: 5 }, async () => {
      const queued = await c.responses.create({
        model: CHAT_MODEL,
        input: 'Write a long story',
        max_output_tokens: 250,
        background: true,
      });
      await poll(c, queued.id, (x) => x.status === 'in_progress');
      await new Promise((res) => setTimeout(res, 200));
      const cancelled = await c.responses.cancel(queued.id);
      expect(cancelled.status).toBe('cancelled');
      return cancelled;
    });
    expect((await c.responses.retrieve(r.id)).status).toBe('cancelled');
    expect(r.usage!.output_tokens).toBeGreaterThan(0);
    expect(r.usage!.output_tokens).toBeLessThan(250);
    await h.settled(a.accountId);
    const charges = (await usageRecords(h.redis.client(), a.accountId, { count: 10 })).filter(
      (x) => x.type === 'charge',
    );
    expect(charges).toHaveLength(1);
    expect(charges[0]!.outputTokens).toBe(r.usage!.output_tokens);
    expect(charges[0]!.cost).toBeGreaterThan(0);
    // The replay ends where the job was cancelled.
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const ev of await c.responses.retrieve(r.id, { stream: true })) events.push(ev);
    expect(events.some((e) => e.type === 'response.output_text.delta')).toBe(true);
    expect(events.some((e) => e.type === 'response.completed')).toBe(false);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('a job refused by billing (429) ends failed, nothing charged', async () => {
    const a = await h.newAccount({ credit: '0.000001' });
    const c = v7(a.secret);
    const queued = await c.responses.create({
      model: CHAT_MODEL,
      input: 'Hello',
      max_output_tokens: 250,
      background: true,
    });
    const r = await poll(c, queued.id, ended);
    expect(r.status).toBe('failed');
    expect(r.error!.message.length).toBeGreaterThan(0);
    await h.settled(a.accountId);
    const charges = (await usageRecords(h.redis.client(), a.accountId, { count: 10 })).filter(
      (x) => x.type === 'charge',
    );
    expect(charges).toHaveLength(0);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});
