// The Responses API past create/get/delete (issue 39), through openai-node 7 (the `openai-v7`
// alias) against the real proxy, Redis and simulator engines: input items and their cursor pages,
// the usage details the SDK types promise, reasoning carried as reasoning items, and background
// responses (poll, cancel, replay from a sequence number), each billed exactly once.
import OpenAI from 'openai-v7';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

const THINKING_MODEL = 'Org/Thinking-Chat';

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    {},
    {
      entries: (endpoints) => [
        {
          id: THINKING_MODEL,
          kind: 'chat',
          pricing: { USD: { input: '1', output: '2' } },
          capabilities: { tools: true, reasoning: true },
          endpoints,
          created: 1_700_000_000,
        },
      ],
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
