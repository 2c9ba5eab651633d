// Hosted tools a client offers but does not force (issue 30 item 3; docs/api.md "Hosted tools"):
// Codex CLI offers OpenAI's web_search with every request by default. No engine here can run it,
// so the call is served with the tool not offered to the model, and the header
// x-modelplane-tools-not-offered names it; forcing one through tool_choice is a 400 naming it.
// On chat completions web_search_options is the same offer. (The Messages surface keeps refusing
// server-side tools: SPEC MSG-4.)
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

const fn = {
  type: 'function' as const,
  name: 'list_files',
  parameters: { type: 'object', properties: {} },
  strict: false,
};

async function expectOneChargeTo(a: { accountId: string; keyId: string }): Promise<void> {
  await h.settled(a.accountId);
  const charges = (await usageRecords(h.redis.client(), a.accountId, { count: 10 })).filter(
    (r) => r.type === 'charge',
  );
  expect(charges).toEqual([expect.objectContaining({ keyId: a.keyId, model: CHAT_MODEL })]);
  await expectLedgerClean(h.redis.client(), [a.accountId]);
}

describe('hosted tools offered, not forced', () => {
  it('Responses: web_search beside a function is served; the engine gets the function only; the header names web_search', async () => {
    const a = await h.newAccount();
    const { out, sent } = await engineRequests(() =>
      h
        .client(a.secret)
        .responses.create({
          model: CHAT_MODEL,
          max_output_tokens: 16,
          input: 'hi',
          tools: [fn, { type: 'web_search' }],
          tool_choice: 'auto',
        })
        .withResponse(),
    );
    expect(out.data.status).toMatch(/completed|incomplete/);
    expect(out.response.headers.get('x-modelplane-tools-not-offered')).toBe('web_search');
    expect(
      sent.map((b) =>
        (b.tools as { type: string; function: { name: string } }[]).map((t) => t.function.name),
      ),
    ).toEqual([['list_files']]);
    await expectOneChargeTo(a);
  });

  it('Responses, streamed: web_search alone is served with no tools and no tool_choice sent', async () => {
    const a = await h.newAccount();
    const { out, sent } = await engineRequests(async () => {
      const { data, response } = await h
        .client(a.secret)
        .responses.create({
          model: CHAT_MODEL,
          max_output_tokens: 16,
          input: 'hi',
          stream: true,
          tools: [{ type: 'web_search_preview' }],
          tool_choice: 'auto',
        })
        .withResponse();
      const types: string[] = [];
      for await (const e of data) types.push(e.type);
      return { types, headers: response.headers };
    });
    expect(out.types.at(-1)).toMatch(/response\.(completed|incomplete)/);
    expect(out.headers.get('x-modelplane-tools-not-offered')).toBe('web_search_preview');
    expect(sent).toHaveLength(1);
    expect(sent[0]).not.toHaveProperty('tools');
    expect(sent[0]).not.toHaveProperty('tool_choice');
    await expectOneChargeTo(a);
  });

  it('chat completions: web_search_options is served, not sent, and named in the header', async () => {
    const a = await h.newAccount();
    const { out, sent } = await engineRequests(() =>
      h
        .client(a.secret)
        .chat.completions.create({
          model: CHAT_MODEL,
          max_tokens: 8,
          messages: [{ role: 'user', content: 'hi' }],
          web_search_options: {},
        })
        .withResponse(),
    );
    expect(out.response.headers.get('x-modelplane-tools-not-offered')).toBe('web_search');
    expect(sent).toHaveLength(1);
    expect(sent[0]).not.toHaveProperty('web_search_options');
    await expectOneChargeTo(a);
  });

  it('Responses: tools called in a format only OpenAI models are trained on (local_shell, apply_patch), in an additional_tools item, are left out and named like hosted ones', async () => {
    const a = await h.newAccount();
    const { out, sent } = await engineRequests(() =>
      h
        .client(a.secret)
        .responses.create({
          model: CHAT_MODEL,
          max_output_tokens: 16,
          input: [
            {
              type: 'additional_tools',
              role: 'developer',
              tools: [fn, { type: 'local_shell' }, { type: 'apply_patch' }],
            },
            { role: 'user', content: 'hi' },
          ],
        })
        .withResponse(),
    );
    expect(out.response.headers.get('x-modelplane-tools-not-offered')).toBe('local_shell, apply_patch');
    expect(
      sent.map((b) =>
        (b.tools as { type: string; function: { name: string } }[]).map((t) => t.function.name),
      ),
    ).toEqual([['list_files']]);
    await expectOneChargeTo(a);
  });

  it('a call offering no hosted tool carries no header', async () => {
    const { response } = await h
      .client()
      .chat.completions.create({
        model: CHAT_MODEL,
        max_tokens: 4,
        messages: [{ role: 'user', content: 'hi' }],
      })
      .withResponse();
    expect(response.headers.get('x-modelplane-tools-not-offered')).toBeNull();
  });
});

describe('hosted tools forced', () => {
  it.each([
    [
      'tool_choice naming it',
      { tools: [{ type: 'web_search' }], tool_choice: { type: 'web_search' } },
      /"web_search"/,
    ],
    [
      'tool_choice required with only hosted tools',
      { tools: [{ type: 'file_search', vector_store_ids: ['v'] }], tool_choice: 'required' },
      /file_search/,
    ],
  ])(
    'ERR-2 Responses, %s: a 400 naming tool_choice; no engine call; nothing charged',
    async (_name, extra, message) => {
      const a = await h.newAccount();
      const { out, sent } = await engineRequests(() =>
        h
          .client(a.secret)
          .responses.create({ model: CHAT_MODEL, input: 'hi', ...(extra as object) })
          .then(
            () => null,
            (e: unknown) => e as { status?: number; error?: { param?: string; message?: string } },
          ),
      );
      expect(out?.status).toBe(400);
      expect(out?.error?.param).toBe('tool_choice');
      expect(out?.error?.message).toMatch(message);
      expect(sent).toEqual([]);
      await h.settled(a.accountId);
      expect((await usageRecords(h.redis.client(), a.accountId, { count: 10 })).map((r) => r.type)).toEqual([
        'topup',
      ]);
      await expectLedgerClean(h.redis.client(), [a.accountId]);
    },
  );

  it('Responses: a tool type that is neither one the platform carries nor one it leaves out stays a 400 naming it', async () => {
    const err = await h
      .client()
      .responses.create({
        model: CHAT_MODEL,
        input: 'hi',
        tools: [{ type: 'teleport' } as unknown as OpenAI.Responses.Tool],
      })
      .then(
        () => null,
        (e: unknown) => e as { status?: number; error?: { param?: string } },
      );
    expect(err?.status).toBe(400);
    expect(err?.error?.param).toBe('tools[0].type');
  });
});
