// The Responses flows through the Vercel AI SDK 7 (`ai` + `@ai-sdk/openai` 4) and 6 (npm aliases
// `ai-v6` + `ai-sdk-openai-v3`), as issue 39 asks: a whole answer, a stream, a conversation carried
// by `previous_response_id`, a function tool called, a thinking model's reasoning shown — against
// the proxy with the simulator, each billed, the ledger clean.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, streamText } from 'ai';
import { createOpenAI as createOpenAIV3 } from 'ai-sdk-openai-v3';
import { generateText as generateTextV6, streamText as streamTextV6 } from 'ai-v6';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, chatModel, type Harness, startHarness } from '../proxy/harness.ts';

let h: Harness;
const THINKING_MODEL = 'Org/Thinking-Chat';
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

// The two majors' functions have the same call shapes for what is used here; typed as the newer.
const sdks = [
  ['ai 7 + @ai-sdk/openai 4', createOpenAI, generateText, streamText],
  [
    'ai 6 + @ai-sdk/openai 3',
    createOpenAIV3 as unknown as typeof createOpenAI,
    generateTextV6 as unknown as typeof generateText,
    streamTextV6 as unknown as typeof streamText,
  ],
] as const;

describe.each(sdks)('%s', (_name, create, generate, stream) => {
  it('create, stream, previous_response_id and a function call through the Responses API; each billed, ledger clean', async () => {
    const a = await h.newAccount();
    const model = create({ apiKey: a.secret, baseURL: h.baseURL }).responses(CHAT_MODEL);

    const first = await generate({ model, prompt: 'Hello', maxOutputTokens: 12 });
    expect(first.text.length).toBeGreaterThan(0);
    expect(first.usage.outputTokens).toBeGreaterThan(0);
    const responseId = (first.providerMetadata?.openai as { responseId?: string } | undefined)?.responseId;
    expect(responseId).toMatch(/^resp_/);

    const s = stream({ model, prompt: 'Hi', maxOutputTokens: 12 });
    let text = '';
    for await (const delta of s.textStream) text += delta;
    expect(text.length).toBeGreaterThan(0);
    expect((await s.usage).outputTokens).toBeGreaterThan(0);

    const next = await generate({
      model,
      prompt: 'And then?',
      maxOutputTokens: 12,
      providerOptions: { openai: { previousResponseId: responseId! } },
    });
    expect(next.text.length).toBeGreaterThan(0);
    // The second turn was sent the first as context: more input than its own prompt alone.
    expect(next.usage.inputTokens!).toBeGreaterThan(first.usage.inputTokens!);

    // A function tool the model calls (the simulator calls a tool the prompt names).
    const called = await generate({
      model,
      prompt: 'Use get_weather for Paris',
      maxOutputTokens: 64,
      tools: {
        get_weather: {
          description: 'The weather in a city',
          inputSchema: jsonSchema<{ city: string }>({
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
          }),
        },
      },
    });
    expect(called.toolCalls.map((c) => c.toolName)).toEqual(['get_weather']);
    expect(typeof (called.toolCalls[0]!.input as { city: unknown }).city).toBe('string');

    await h.settled(a.accountId);
    const r = h.redis.client();
    const charges = (await usageRecords(r, a.accountId, { count: 100 })).filter((e) => e.type === 'charge');
    // Each call charged once, for the output tokens the SDK reported.
    expect(charges.map((e) => e.outputTokens).sort()).toEqual(
      [
        first.usage.outputTokens,
        (await s.usage).outputTokens,
        next.usage.outputTokens,
        called.usage.outputTokens,
      ].sort(),
    );
    await expectLedgerClean(r, [a.accountId]);
  });

  it('a thinking model’s reasoning is what the SDK shows as reasoning, whole and streamed', async () => {
    const a = await h.newAccount();
    const model = create({ apiKey: a.secret, baseURL: h.baseURL }).responses(THINKING_MODEL);
    // The SDK sends reasoning options only for model ids it knows reason (OpenAI's), unless forced.
    const providerOptions = {
      openai: { reasoningEffort: 'low', reasoningSummary: 'auto', forceReasoning: true },
    };
    const whole = await generate({
      model,
      prompt: 'Think, then answer',
      maxOutputTokens: 120,
      providerOptions,
    });
    expect(whole.reasoningText?.length).toBeGreaterThan(0);
    expect(whole.text.length).toBeGreaterThan(0);

    const s = stream({ model, prompt: 'Think, then answer', maxOutputTokens: 120, providerOptions });
    let reasoning = '';
    for await (const part of s.fullStream) if (part.type === 'reasoning-delta') reasoning += part.text;
    expect(reasoning.length).toBeGreaterThan(0);
    expect(await s.reasoningText).toBe(reasoning);
    await h.settled(a.accountId);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});
