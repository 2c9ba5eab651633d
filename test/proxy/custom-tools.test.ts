// Custom tools and additional_tools items on the Responses surface (issue 30; docs/api.md "Custom
// tools"), as Codex CLI's default model gets its tools: an `additional_tools` input item holding a
// namespace with a custom tool taking free text in a Lark grammar. The engine is offered a function
// of one string `input`; its call comes back as a custom_tool_call carrying that text (whole and
// streamed, through the official SDK's stream accumulation), and a custom_tool_call with its
// custom_tool_call_output passed back reaches the engine as the call and its tool result.
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { engineChatRequests } from './engine-requests.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const engineRequests = <T>(go: () => Promise<T>) => engineChatRequests(h, go);

const GRAMMAR = 'start: /[\\s\\S]+/';
const customTool = {
  type: 'custom',
  name: 'exec',
  description: 'Run JavaScript',
  format: { type: 'grammar', syntax: 'lark', definition: GRAMMAR },
} as const;
const additionalTools = {
  type: 'additional_tools',
  role: 'developer',
  tools: [{ type: 'namespace', name: 'functions', description: '', tools: [customTool] }],
} as unknown as OpenAI.Responses.ResponseInputItem;
const prompt = 'Use functions__exec with input="text(1 + 1)"';

async function expectChargesTo(a: { accountId: string; keyId: string }, n: number): Promise<void> {
  await h.settled(a.accountId);
  const charges = (await usageRecords(h.redis.client(), a.accountId, { count: 10 })).filter(
    (r) => r.type === 'charge',
  );
  expect(charges).toHaveLength(n);
  for (const c of charges) expect(c).toMatchObject({ keyId: a.keyId, model: CHAT_MODEL });
  await expectLedgerClean(h.redis.client(), [a.accountId]);
}

describe('custom tools', () => {
  it('offered in an additional_tools namespace: the engine gets a function of one string with the grammar in its description; the call is a custom_tool_call with the text; passed back with its output, the engine gets the call and the tool result', async () => {
    const a = await h.newAccount();
    const client = h.client(a.secret);
    const { out: first, sent } = await engineRequests(() =>
      client.responses.create({
        model: CHAT_MODEL,
        store: false,
        max_output_tokens: 60,
        input: [additionalTools, { role: 'user', content: prompt }],
      }),
    );
    const fn = (sent[0]!.tools as { function: Record<string, unknown> }[])[0]!.function;
    expect(fn).toMatchObject({
      name: 'functions__exec',
      parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
    });
    expect(fn.description).toContain(`Lark grammar:\n${GRAMMAR}`);
    const call = first.output.find((o) => o.type === 'custom_tool_call');
    expect(call).toMatchObject({
      name: 'exec',
      namespace: 'functions',
      input: 'text(1 + 1)',
      status: 'completed',
    });
    expect(call!.id).toMatch(/^ctc_/);

    const { sent: again } = await engineRequests(() =>
      client.responses.create({
        model: CHAT_MODEL,
        store: false,
        max_output_tokens: 20,
        input: [
          additionalTools,
          { role: 'user', content: prompt },
          call!,
          { type: 'custom_tool_call_output', call_id: call!.call_id, output: '2' },
        ],
      }),
    );
    const messages = again[0]!.messages as Record<string, unknown>[];
    expect(messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: call!.call_id,
            type: 'function',
            function: { name: 'functions__exec', arguments: '{"input":"text(1 + 1)"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: call!.call_id, content: '2' },
    ]);
    await expectChargesTo(a, 2);
  });

  it('streamed: custom_tool_call_input delta and done events; the SDK’s final response holds the call with its text', async () => {
    const a = await h.newAccount();
    const stream = h.client(a.secret).responses.stream({
      model: CHAT_MODEL,
      store: false,
      max_output_tokens: 60,
      tools: [customTool],
      input: 'Use exec with input="text(2)"',
    });
    const types: string[] = [];
    let done: string | undefined;
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === 'response.custom_tool_call_input.done') done = e.input;
    }
    const final = await stream.finalResponse();
    expect(types).toContain('response.custom_tool_call_input.delta');
    expect(done).toBe('text(2)');
    expect(final.output.find((o) => o.type === 'custom_tool_call')).toMatchObject({
      name: 'exec',
      input: 'text(2)',
    });
    expect(final.output.find((o) => o.type === 'custom_tool_call')).not.toHaveProperty('namespace');
    await expectChargesTo(a, 1);
  });

  it('tool_choice {type: custom} forces it; naming a custom tool not offered is a 400, nothing charged', async () => {
    const a = await h.newAccount();
    const client = h.client(a.secret);
    const { sent } = await engineRequests(() =>
      client.responses.create({
        model: CHAT_MODEL,
        store: false,
        max_output_tokens: 60,
        tools: [customTool],
        tool_choice: { type: 'custom', name: 'exec' },
        input: 'hi',
      }),
    );
    expect(sent[0]!.tool_choice).toEqual({ type: 'function', function: { name: 'exec' } });
    await expect(
      client.responses.create({
        model: CHAT_MODEL,
        tools: [customTool],
        tool_choice: { type: 'custom', name: 'nope' },
        input: 'hi',
      }),
    ).rejects.toMatchObject({ status: 400, param: 'tool_choice.name' });
    await expectChargesTo(a, 1);
  });
});
