// An output bound above the model's limit (issue 30 item 2; docs/api.md "Output bounds above the
// model's limit"): served at the limit on every surface — max_tokens and max_completion_tokens on
// chat, max_tokens on Messages, max_output_tokens on Responses — the engine asked for the limit and
// the hold sized by it, the response carrying `x-modelplane-output-clamped`; a Model with
// outputLimitPolicy `refuse` answers 400 naming the field and charges nothing. Claude Code sends
// max_tokens 32000 whatever the model, so refusing made it fail on every smaller model.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { engineChatRequests } from './engine-requests.ts';
import { CHAT_MODEL, chatModel, type Harness, startHarness } from './harness.ts';

const STRICT = 'Org/Strict-Limit';
const LIMIT = 256; // CHAT_MODEL's maxOutputTokens in the harness

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    {},
    {
      entries: (endpoints) => [
        {
          ...chatModel(STRICT, endpoints, { tools: true }),
          maxOutputTokens: LIMIT,
          outputLimitPolicy: 'refuse',
        },
      ],
    },
  );
});
afterAll(async () => {
  await h?.stop();
});

/** The max_tokens of the chat requests the engines got while `go` ran. */
async function engineMaxTokens<T>(go: () => Promise<T>): Promise<{ out: T; asked: unknown[] }> {
  const { out, sent } = await engineChatRequests(h, go);
  return { out, asked: sent.map((b) => b.max_tokens) };
}

const anthropic = (secret: string) =>
  new Anthropic({ apiKey: secret, baseURL: h.baseURL.replace(/\/v1$/, ''), maxRetries: 0 });

/** Each surface's call asking `n` output tokens of `model`, returning the response's headers. */
const surfaces: [string, (secret: string, model: string, n: number) => Promise<Headers>][] = [
  [
    'chat max_tokens',
    async (secret, model, n) =>
      (
        await h
          .client(secret)
          .chat.completions.create({ model, max_tokens: n, messages: [{ role: 'user', content: 'hi' }] })
          .withResponse()
      ).response.headers,
  ],
  [
    'chat max_completion_tokens, streamed',
    async (secret, model, n) => {
      const { data, response } = await h
        .client(secret)
        .chat.completions.create({
          model,
          max_completion_tokens: n,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        })
        .withResponse();
      for await (const _ of data);
      return response.headers;
    },
  ],
  [
    'Messages max_tokens',
    async (secret, model, n) =>
      (
        await anthropic(secret)
          // An explicit timeout: without one the SDK itself refuses a large non-streamed max_tokens.
          .messages.create(
            { model, max_tokens: n, messages: [{ role: 'user', content: 'hi' }] },
            { timeout: 60_000 },
          )
          .withResponse()
      ).response.headers,
  ],
  [
    'Messages max_tokens, streamed',
    async (secret, model, n) => {
      const { data, response } = await anthropic(secret)
        .messages.create({ model, max_tokens: n, stream: true, messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
      for await (const _ of data);
      return response.headers;
    },
  ],
  [
    'Responses max_output_tokens',
    async (secret, model, n) =>
      (await h.client(secret).responses.create({ model, max_output_tokens: n, input: 'hi' }).withResponse())
        .response.headers,
  ],
];

describe('an output bound above the model limit', () => {
  it.each(surfaces)(
    'BILL-1 %s 32000 on a 256-token model: served at 256, the engine asked 256, the header says so, billed to the key',
    async (_name, call) => {
      const a = await h.newAccount();
      const { out: headers, asked } = await engineMaxTokens(() => call(a.secret, CHAT_MODEL, 32_000));
      expect(headers.get('x-modelplane-output-clamped')).toBe(String(LIMIT));
      expect(asked).toEqual([LIMIT]);
      await h.settled(a.accountId);
      const charges = (await usageRecords(h.redis.client(), a.accountId, { count: 10 })).filter(
        (r) => r.type === 'charge',
      );
      expect(charges).toEqual([expect.objectContaining({ keyId: a.keyId, model: CHAT_MODEL })]);
      await expectLedgerClean(h.redis.client(), [a.accountId]);
    },
  );

  it.each(surfaces)('%s at the limit: no header, the engine asked what was sent', async (_name, call) => {
    const { out: headers, asked } = await engineMaxTokens(() => call(h.secret, CHAT_MODEL, LIMIT));
    expect(headers.get('x-modelplane-output-clamped')).toBeNull();
    expect(asked).toEqual([LIMIT]);
  });

  it.each(surfaces)(
    'ERR-2 %s on a Model with outputLimitPolicy refuse: 400 naming the field, no engine call, nothing charged',
    async (name, call) => {
      const a = await h.newAccount();
      const { out, asked } = await engineMaxTokens(() =>
        call(a.secret, STRICT, LIMIT + 1).then(
          () => null,
          (e: unknown) => e as { status?: number; error?: unknown },
        ),
      );
      expect(out?.status).toBe(400);
      const field = name.split(' ')[1]!.replace(/,$/, '');
      expect(JSON.stringify(out?.error)).toContain(field);
      expect(JSON.stringify(out?.error)).toContain(`at most ${LIMIT}`);
      expect(asked).toEqual([]);
      await h.settled(a.accountId);
      expect((await usageRecords(h.redis.client(), a.accountId, { count: 10 })).map((r) => r.type)).toEqual([
        'topup',
      ]);
      await expectLedgerClean(h.redis.client(), [a.accountId]);
    },
  );
});
