// Both dialects through the newest major of each official SDK beside the previous one (issue 25):
// users install openai 7.x and @anthropic-ai/sdk 1.x today, and 6.x / 0.x are still everywhere.
// The newer majors are installed under npm aliases (package.json: openai-v7, anthropic-sdk-v1).
import AnthropicV0 from '@anthropic-ai/sdk';
import AnthropicV1 from 'anthropic-sdk-v1';
import OpenAIV6 from 'openai';
import OpenAIV7 from 'openai-v7';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, type Harness, startHarness } from '../proxy/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

// One test body for both majors: the calls used here have the same parameter types in both, so
// the newer client is typed as the older (TypeScript cannot call a union of overloaded methods);
// at run time each is its own package.
const openais: [string, typeof OpenAIV6][] = [
  ['openai 6.x', OpenAIV6],
  ['openai 7.x', OpenAIV7 as unknown as typeof OpenAIV6],
];
const anthropics: [string, typeof AnthropicV0][] = [
  ['@anthropic-ai/sdk 0.x', AnthropicV0],
  ['@anthropic-ai/sdk 1.x', AnthropicV1 as unknown as typeof AnthropicV0],
];

describe.each(openais)('%s', (_name, OpenAI) => {
  const client = (apiKey: string) => new OpenAI({ apiKey, baseURL: h.baseURL, maxRetries: 0 });

  it('CHAT-1 chat completions, Responses create and stream; each billed to the key as reported', async () => {
    const a = await h.newAccount();
    const c = client(a.secret);
    const chat = await c.chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 8,
    });
    expect(chat.choices[0]!.message.content!.length).toBeGreaterThan(0);
    const r = await c.responses.create({
      model: CHAT_MODEL,
      input: 'Hi',
      max_output_tokens: 8,
      store: false,
    });
    expect(r.output_text.length).toBeGreaterThan(0);
    const s = await c.responses
      .stream({ model: CHAT_MODEL, input: 'Hello', max_output_tokens: 8, store: false })
      .finalResponse();
    expect(s.output_text.length).toBeGreaterThan(0);
    await h.settled(a.accountId);
    const charges = (await usageRecords(h.redis.client(), a.accountId, { count: 10 })).filter(
      (x) => x.type === 'charge',
    );
    expect(charges.map((x) => x.outputTokens).sort()).toEqual(
      [chat.usage!.completion_tokens, r.usage!.output_tokens, s.usage!.output_tokens].sort(),
    );
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('AUTH-5 an unknown key is the SDK’s AuthenticationError', async () => {
    const err = await client('sk-nope-000000000000000000000000')
      .responses.create({ model: CHAT_MODEL, input: 'Hi' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
  });
});

describe.each(anthropics)('%s', (_name, Anthropic) => {
  const client = (apiKey: string) =>
    new Anthropic({ apiKey, baseURL: h.baseURL.replace(/\/v1$/, ''), maxRetries: 0 });

  it('MSG-1 MSG-7 create and stream (with a system turn inside messages); billed to the key as reported', async () => {
    const a = await h.newAccount();
    const c = client(a.secret);
    const m = await c.messages.create({
      model: CHAT_MODEL,
      max_tokens: 8,
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Again' },
      ],
    });
    expect(m.content.length).toBeGreaterThan(0);
    const s = await c.messages
      .stream({ model: CHAT_MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'Hello' }] })
      .finalMessage();
    expect(s.content.length).toBeGreaterThan(0);
    await h.settled(a.accountId);
    const charges = (await usageRecords(h.redis.client(), a.accountId, { count: 10 })).filter(
      (x) => x.type === 'charge',
    );
    expect(charges.map((x) => x.outputTokens).sort()).toEqual(
      [m.usage.output_tokens, s.usage.output_tokens].sort(),
    );
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('MSG-8 an unknown key is the SDK’s AuthenticationError', async () => {
    const err = await client('sk-nope-000000000000000000000000')
      .messages.create({ model: CHAT_MODEL, max_tokens: 5, messages: [{ role: 'user', content: 'Hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
  });
});
