// Model aliases (issue 30, docs/models.md#aliases) through the real proxy, Redis and simulator
// engines, with the official openai and @anthropic-ai/sdk clients: every surface resolves an alias
// to its model, answers and bills under the model's id, lists exact aliases in GET /v1/models,
// and refuses a name that resolves to nothing (or to a model the caller may not call) as before.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, chatModel, EMBED_MODEL, type Harness, imageModel, startHarness } from './harness.ts';

const CHAT = 'Alias/Chat';
const EMBED = 'Alias/Embed';
const IMAGE = 'Alias/Image';

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    {},
    {
      entries: (endpoints) => [
        {
          ...chatModel(CHAT, endpoints, { tools: true }),
          servedName: CHAT_MODEL,
          aliases: ['claude-haiku-4-5', 'claude-3-5-haiku-*', 'GPT-5-Codex', CHAT_MODEL.toUpperCase()],
        },
        {
          id: EMBED,
          kind: 'embedding',
          servedName: EMBED_MODEL,
          aliases: ['text-embedding-3-small'],
          pricing: { USD: { input: '0.1' } },
          endpoints,
          created: 1_700_000_000,
        },
        { ...imageModel(IMAGE, endpoints), aliases: ['dall-e-3'] },
        {
          ...chatModel('Alias/Invite', endpoints),
          availability: 'inviteOnly',
          aliases: ['invited-alias'],
        },
      ],
    },
  );
});
afterAll(async () => {
  await h?.stop();
});

const anthropic = (secret: string) =>
  new Anthropic({ apiKey: secret, baseURL: h.baseURL.replace(/\/v1$/, ''), maxRetries: 0 });

async function charges(accountId: string, n: number) {
  await h.settled(accountId);
  const recs = (await usageRecords(h.redis.client(), accountId, { count: 50 })).filter(
    (r) => r.type === 'charge',
  );
  expect(recs).toHaveLength(n);
  return recs;
}

describe('an alias resolves to its model on every surface', () => {
  it('chat (exact alias, case-insensitive): answered and billed as the model id', async () => {
    const a = await h.newAccount();
    const r = await h.client(a.secret).chat.completions.create({
      model: 'gpt-5-codex',
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 4,
    });
    expect(r.model).toBe(CHAT);
    const [rec] = await charges(a.accountId, 1);
    expect(rec).toMatchObject({ model: CHAT, keyId: a.keyId });
    // Priced as the model: 1 USD per 1M input tokens, 2 per 1M output (nano-units per token).
    expect(rec!.cost).toBe(r.usage!.prompt_tokens * 1_000 + r.usage!.completion_tokens * 2_000);
    // The engine was asked by its served name, never by the alias.
    const asked = h.sims
      .flatMap((s) => s.received())
      .map((x) => (x.json as { model?: string } | null)?.model);
    expect(asked).not.toContain('gpt-5-codex');
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('chat streaming (pattern alias): every chunk names the model id', async () => {
    const stream = await h.client().chat.completions.create({
      model: 'claude-3-5-haiku-20241022',
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 4,
      stream: true,
    });
    const models = new Set<string>();
    for await (const c of stream) models.add(c.model);
    expect([...models]).toEqual([CHAT]);
  });

  it('Messages (Claude Code’s small/fast model name) with the Anthropic SDK', async () => {
    const a = await h.newAccount();
    const m = await anthropic(a.secret).messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'Write a title' }],
    });
    expect(m.model).toBe(CHAT);
    const [rec] = await charges(a.accountId, 1);
    expect(rec).toMatchObject({ model: CHAT });
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('Responses (Codex’s default model name)', async () => {
    const r = await h.client().responses.create({ model: 'gpt-5-codex', input: 'Hi', max_output_tokens: 16 });
    expect(r.model).toBe(CHAT);
  });

  it('embeddings and images', async () => {
    const a = await h.newAccount();
    const e = await h.client(a.secret).embeddings.create({ model: 'text-embedding-3-small', input: 'hello' });
    expect(e.model).toBe(EMBED);
    const img = await h.client(a.secret).images.generate({ model: 'DALL-E-3', prompt: 'a fox' });
    expect(img.data).toHaveLength(1);
    const recs = await charges(a.accountId, 2);
    expect(recs.map((r) => r.model).sort()).toEqual([EMBED, IMAGE]);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('an alias spelled like another model’s id never shadows that model', async () => {
    const r = await h.client().chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 2,
    });
    expect(r.model).toBe(CHAT_MODEL);
  });
});

describe('refusals stay as they were', () => {
  const notFound = async (p: Promise<unknown>) => {
    const err = await p.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('model_not_found');
  };

  it('a name that resolves to nothing, and a pattern’s bare prefix, are 404 model_not_found; nothing charged', async () => {
    const a = await h.newAccount();
    for (const model of ['claude-opus-4', 'claude-3-5-haiku']) {
      await notFound(
        h.client(a.secret).chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }] }),
      );
    }
    await charges(a.accountId, 0);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('an alias of an invite-only model is as hidden as the model: 404, and not listed', async () => {
    await notFound(
      h
        .client()
        .chat.completions.create({ model: 'invited-alias', messages: [{ role: 'user', content: 'Hi' }] }),
    );
    await notFound(h.client().models.retrieve('invited-alias'));
    expect((await h.client().models.list()).data.map((m) => m.id)).not.toContain('invited-alias');
  });

  it('an alias of the wrong kind gets the kind error naming the model, as its id would', async () => {
    const err = await h
      .client()
      .chat.completions.create({ model: 'dall-e-3', messages: [{ role: 'user', content: 'Hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as Error).message).toContain(IMAGE);
  });
});

describe('GET /v1/models', () => {
  it('lists each exact alias as an entry of its own after the models; patterns are not listed', async () => {
    const ids = (await h.client().models.list()).data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining([CHAT, EMBED, IMAGE, 'claude-haiku-4-5', 'GPT-5-Codex']));
    expect(ids.filter((id) => id.includes('*'))).toEqual([]);
    // Spelled like CHAT_MODEL's id, that alias is the id's, not listed twice.
    expect(ids.filter((id) => id.toLowerCase() === CHAT_MODEL.toLowerCase())).toEqual([CHAT_MODEL]);
    expect(ids.indexOf('claude-haiku-4-5')).toBeGreaterThan(ids.indexOf(CHAT));
  });

  it('retrieves an alias by its name (the listed entry), a pattern match as its model', async () => {
    expect(await h.client().models.retrieve('Claude-Haiku-4-5')).toMatchObject({
      id: 'claude-haiku-4-5',
      object: 'model',
    });
    expect((await h.client().models.retrieve('claude-3-5-haiku-latest')).id).toBe(CHAT);
  });
});
