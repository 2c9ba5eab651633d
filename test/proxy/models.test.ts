// The catalogue through the proxy (CAT-1..7), with the official openai SDK as the client.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALIAS_MODEL, CHAT_MODEL, EMBED_MODEL, type Harness, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const get = (path: string, secret = h.secret) =>
  fetch(`${h.baseURL}${path}`, { headers: { authorization: `Bearer ${secret}` } });

async function status404(p: Promise<unknown>) {
  const err = await p.catch((e: unknown) => e);
  expect(err).toBeInstanceOf(OpenAI.NotFoundError);
  expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('model_not_found');
}

describe('GET /v1/models', () => {
  it('CAT-1 lists the live catalogue with id, object, created, owned_by, region, tags', async () => {
    const list = await h.client().models.list();
    expect(list.data.map((m) => m.id)).toEqual([EMBED_MODEL, CHAT_MODEL, ALIAS_MODEL]);
    expect(list.data[1]).toEqual({
      id: CHAT_MODEL,
      object: 'model',
      created: 1_700_000_000,
      owned_by: 'modelplane',
      region: 'eu-west',
      tags: ['chat', 'tools'],
    });
  });

  it('CAT-1 the catalogue is live: a new model appears without a restart', async () => {
    await h.catalogue.put({ id: 'Live/New', kind: 'chat', pricing: { USD: { input: '1' } }, created: 1 });
    await expect
      .poll(async () => (await h.client().models.list()).data.map((m) => m.id))
      .toContain('Live/New');
    await h.catalogue.remove('Live/New');
    await expect
      .poll(async () => (await h.client().models.list()).data.map((m) => m.id))
      .not.toContain('Live/New');
  });

  it('CAT-4 CAT-5 unpriced, coming-soon and ungranted invite-only models are hidden', async () => {
    const ids = (await h.client().models.list()).data.map((m) => m.id);
    expect(ids).not.toContain('Priced/EUR-Only');
    expect(ids).not.toContain('Soon/Model');
    expect(ids).not.toContain('Invite/Only');
    const eur = await h.newAccount({ country: 'DE' });
    expect((await h.client(eur.secret).models.list()).data.map((m) => m.id)).toEqual([
      'Org/Chat-Model',
      'Priced/EUR-Only',
    ]);
  });

  it('CAT-7 works as a fast key check with no side effects (no hold, no usage)', async () => {
    await h.quiesce();
    const before = await h.metering.balance(h.accountId);
    const t0 = performance.now();
    for (let i = 0; i < 50; i++) await h.client().models.list();
    expect((performance.now() - t0) / 50).toBeLessThan(20);
    await h.quiesce();
    expect(await h.metering.balance(h.accountId)).toEqual(before);
  });
});

describe('GET /v1/models/{model}', () => {
  it('CAT-2 CAT-3 retrieves ids with / unencoded and in any case, echoing the canonical id', async () => {
    for (const path of ['/models/Org/Chat-Model', '/models/org/chat-model', '/models/ORG/CHAT-MODEL']) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect((await res.json()).id).toBe(CHAT_MODEL);
    }
  });

  it('CAT-2 the SDK (which percent-encodes the /) gets the same entry', async () => {
    const m = await h.client().models.retrieve('org/CHAT-model');
    expect(m.id).toBe(CHAT_MODEL);
    expect(m).toMatchObject({ object: 'model', region: 'eu-west' });
  });

  it('CAT-6 a misspelled id → 404 model_not_found', async () => {
    await status404(h.client().models.retrieve('Org/Chat-Modle'));
    await status404(
      h
        .client()
        .chat.completions.create({ model: 'Org/Chat-Modle', messages: [{ role: 'user', content: 'x' }] }),
    );
  });

  it('CAT-4 a model without a price in the account currency → 404 to retrieve and to call', async () => {
    await status404(h.client().models.retrieve('Priced/EUR-Only'));
    await status404(
      h
        .client()
        .chat.completions.create({ model: 'priced/eur-only', messages: [{ role: 'user', content: 'x' }] }),
    );
  });

  it('CAT-5 invite-only is 404 until granted, then listed and callable; coming soon stays 404', async () => {
    const a = await h.newAccount();
    const c = h.client(a.secret);
    await status404(c.models.retrieve('Invite/Only'));
    await status404(
      c.chat.completions.create({ model: 'Invite/Only', messages: [{ role: 'user', content: 'x' }] }),
    );
    await status404(c.models.retrieve('Soon/Model'));
    await h.accounts.grantModel(a.accountId, 'Invite/Only');
    // The grant is announced on pub/sub: the same (cached) key sees it without waiting out the cache.
    const granted = await eventually(() => c.models.retrieve('invite/only'));
    expect(granted.id).toBe('Invite/Only');
    const r = await c.chat.completions.create({
      model: 'INVITE/ONLY',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 2,
    });
    expect(r.model).toBe('Invite/Only');
    await h.accounts.revokeModel(a.accountId, 'Invite/Only');
    await eventually(() => status404(c.models.retrieve('Invite/Only')));
  });
});

/** Retries `f` for up to a second: pub/sub delivery is asynchronous, but fast. */
async function eventually<T>(f: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 1_000;
  for (;;) {
    try {
      return await f();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}
