// Images through the proxy (IMG-*, BILL-3), with the official openai SDK against the real proxy,
// Redis and simulator engines; files in the filesystem store.
import type OpenAI from 'openai';
import { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { globalKeys } from '../../core/redis/keyspace.ts';
import { usageRecords } from '../../core/usage/usage.ts';
import { gradientPng } from '../../engines/simulator/media/png.ts';
import { sweepMedia } from '../../proxy/media/media-sweeper.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { type Harness, imageModel, startHarness } from './harness.ts';

const IMAGE_MODEL = 'Img/Painter';
const NO_EDIT_MODEL = 'Img/Sketch';
const PNG_MAGIC = '89504e470d0a1a0a';

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    {},
    {
      entries: (endpoints) => [
        imageModel(IMAGE_MODEL, endpoints, { edit: true }),
        imageModel(NO_EDIT_MODEL, endpoints, { perImage: '0.01' }),
      ],
    },
  );
});
afterAll(async () => {
  await h?.stop();
});

const png = () => gradientPng(200, 8, 8);

async function post(path: string, body: FormData | object, secret = h.secret) {
  const res = await fetch(`${h.baseURL}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${secret}`,
      ...(body instanceof FormData ? {} : { 'content-type': 'application/json' }),
    },
    body: body instanceof FormData ? body : JSON.stringify(body),
  });
  return {
    res,
    json: (await res.json()) as {
      data?: { url?: string; b64_json?: string }[];
      error?: { message: string; param: string; code: string };
    },
  };
}

describe('image generations', () => {
  it('IMG-1 url (default): a signed link that needs no key and serves a PNG; a tampered link is 403', async () => {
    const a = await h.newAccount();
    const r = await h.client(a.secret).images.generate({ model: IMAGE_MODEL, prompt: 'a red fox', n: 2 });
    expect(r.data).toHaveLength(2);
    const url = r.data![0]!.url!;
    const ok = await fetch(url);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('image/png');
    expect(
      Buffer.from(await ok.arrayBuffer())
        .subarray(0, 8)
        .toString('hex'),
    ).toBe(PNG_MAGIC);
    const tampered = url.replace(/sig=(.)/, (_m, c: string) => `sig=${c === 'A' ? 'B' : 'A'}`);
    const bad = await fetch(tampered);
    expect(bad.status).toBe(403);
    expect(bad.headers.get('x-request-id')).toMatch(/^req_/);
    await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec).toMatchObject({
      type: 'charge',
      kind: 'image',
      images: 2,
      keyId: a.keyId,
      amount: 80_000_000,
    });
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('IMG-1 b64_json: the PNG decodes; /metrics counts the images', async () => {
    const r = await h
      .client()
      .images.generate({ model: IMAGE_MODEL, prompt: 'a blue sea', response_format: 'b64_json' });
    expect(Buffer.from(r.data![0]!.b64_json!, 'base64').subarray(0, 8).toString('hex')).toBe(PNG_MAGIC);
    const text = await (await fetch(h.metricsURL)).text();
    expect(text).toMatch(new RegExp(`mp_proxy_images_total\\{model="${IMAGE_MODEL}"\\} [1-9]`));
  });

  it.each([0, 11, 2.5, '3'])('IMG-2 n = %s is refused naming n; nothing is charged', async (n) => {
    const a = await h.newAccount();
    const { res, json } = await post('/images/generations', { model: IMAGE_MODEL, prompt: 'x', n }, a.secret);
    expect(res.status).toBe(400);
    expect(json.error!.param).toBe('n');
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 5 })).toHaveLength(1);
  });

  it('a chat model is refused with a pointer to the right route; a failed engine call costs nothing', async () => {
    const wrong = await post('/images/generations', { model: 'Org/Chat-Model', prompt: 'x' });
    expect(wrong.res.status).toBe(400);
    expect(wrong.json.error!.message).toMatch(/chat model; call it with \/v1\/chat\/completions/);
    const a = await h.newAccount();
    for (const s of h.sims) s.setOptions({ failBeforeFirstByte: 1 });
    try {
      const failed = await post('/images/generations', { model: IMAGE_MODEL, prompt: 'x' }, a.secret);
      expect(failed.res.status).toBe(500);
    } finally {
      for (const s of h.sims) s.setOptions({ failBeforeFirstByte: 0 });
    }
    await h.settled(a.accountId);
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 5 })).toHaveLength(1);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});

describe('what reaches the engine, and what is charged', () => {
  it('BILL-3 an engine that makes fewer images than n asked is paid for the images made, not n', async () => {
    const a = await h.newAccount();
    for (const s of h.sims) s.setOptions({ maxImages: 1 });
    try {
      const r = await h.client(a.secret).images.generate({ model: IMAGE_MODEL, prompt: 'three foxes', n: 3 });
      expect(r.data).toHaveLength(1);
    } finally {
      for (const s of h.sims) s.setOptions({ maxImages: 0 });
    }
    await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec).toMatchObject({ type: 'charge', kind: 'image', images: 1, amount: 40_000_000 });
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('IMG-1 size, quality, style and the rest are forwarded as sent (generations as JSON, edits as form fields)', async () => {
    const a = await h.newAccount();
    const client = h.client(a.secret);
    const prompt = `passthrough ${Date.now()}`;
    await client.images.generate({
      model: IMAGE_MODEL,
      prompt,
      size: '256x256',
      quality: 'hd',
      style: 'natural',
      user: 'u-42',
    });
    const sent = h.sims
      .flatMap((s) => s.received())
      .find((r) => r.path === '/v1/images/generations' && (r.json as { prompt?: string })?.prompt === prompt);
    expect(sent?.json).toMatchObject({ size: '256x256', quality: 'hd', style: 'natural', user: 'u-42' });

    await client.images.edit({
      model: IMAGE_MODEL,
      prompt,
      image: await toFile(png(), 'in.png', { type: 'image/png' }),
      size: '256x256',
      quality: 'high',
    });
    const edit = h.sims
      .flatMap((s) => s.received())
      .find((r) => r.path === '/v1/images/edits' && r.form?.fields.prompt === prompt);
    expect(edit?.form?.fields).toMatchObject({ size: '256x256', quality: 'high' });
    expect(edit?.form?.files).toEqual([
      { name: 'image', filename: 'in.png', contentType: 'image/png', bytes: png().length },
    ]);
    await h.settled(a.accountId);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});

describe('image retention', () => {
  it('IMG-1 an image is filed for deletion when its link ends; the sweep deletes it and the link then answers 404', async () => {
    const r = await h
      .client()
      .images.generate({ model: IMAGE_MODEL, prompt: `kept for a while ${Date.now()}` });
    const url = r.data![0]!.url!;
    expect((await fetch(url)).status).toBe(200);
    const redis = h.redis.client();
    const filed = await redis.zrange(globalKeys.mediaDue, 0, -1, 'WITHSCORES');
    const at = filed.findIndex((key) => url.includes(encodeURIComponent(key)) || url.includes(key));
    expect(at).toBeGreaterThanOrEqual(0);
    const key = filed[at]!;
    const dueMs = Number(filed[at + 1]);
    // Due when the link's life (MEDIA_IMAGE_TTL_MS) ends, not before: a sweep now leaves it.
    expect(dueMs).toBeGreaterThanOrEqual(Date.now() + h.config.MEDIA_IMAGE_TTL_MS - 60_000);
    expect(await sweepMedia(redis, h.proxy.ctx.media.store, Date.now())).not.toContain(key);
    expect((await fetch(url)).status).toBe(200);
    expect(await sweepMedia(redis, h.proxy.ctx.media.store, dueMs)).toContain(key);
    const gone = await fetch(url);
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect(await redis.zscore(globalKeys.mediaDue, key)).toBeNull();
  });
});

describe('image edits', () => {
  it('IMG-3 one file through the SDK', async () => {
    const r = await h.client().images.edit({
      model: IMAGE_MODEL,
      image: await toFile(png(), 'in.png', { type: 'image/png' }),
      prompt: 'make it blue',
      response_format: 'b64_json',
    });
    expect(Buffer.from(r.data![0]!.b64_json!, 'base64').subarray(0, 8).toString('hex')).toBe(PNG_MAGIC);
  });

  for (const field of ['image[]', 'image']) {
    it(`IMG-3 three files as repeated '${field}'`, async () => {
      const fd = new FormData();
      fd.set('model', IMAGE_MODEL);
      const prompt = `merge them (${field})`;
      fd.set('prompt', prompt);
      fd.set('n', '2');
      for (let i = 0; i < 3; i++)
        fd.append(field, new Blob([new Uint8Array(png())], { type: 'image/png' }), `${i}.png`);
      const { res, json } = await post('/images/edits', fd);
      expect(res.status).toBe(200);
      expect(json.data).toHaveLength(2);
      expect((await fetch(json.data![0]!.url!)).status).toBe(200);
      // The engine got all three, in order, as image[] (several files), whichever spelling came in.
      const sent = h.sims
        .flatMap((s) => s.received())
        .find((r) => r.path === '/v1/images/edits' && r.form?.fields.prompt === prompt);
      expect(sent?.form?.files.map((f) => [f.name, f.filename, f.bytes])).toEqual(
        [0, 1, 2].map((i) => ['image[]', `${i}.png`, png().length]),
      );
    });
  }

  it('IMG-3 an 11th file is refused naming the limit', async () => {
    const fd = new FormData();
    fd.set('model', IMAGE_MODEL);
    fd.set('prompt', 'too many');
    for (let i = 0; i < 11; i++)
      fd.append('image[]', new Blob([new Uint8Array(png())], { type: 'image/png' }), `${i}.png`);
    const { res, json } = await post('/images/edits', fd);
    expect(res.status).toBe(400);
    expect(json.error!.message).toMatch(/At most 10 images/);
  });

  it('IMG-3 a 21 MB file is refused naming the limit', async () => {
    const fd = new FormData();
    fd.set('model', IMAGE_MODEL);
    fd.set('prompt', 'too big');
    fd.append(
      'image',
      new Blob([new Uint8Array(21 * 1024 * 1024).fill(1)], { type: 'image/png' }),
      'big.png',
    );
    const { res, json } = await post('/images/edits', fd);
    expect(res.status).toBe(400);
    expect(json.error!.message).toMatch(/at most 20 MB/);
  });

  it('IMG-4 a model that cannot edit: 400 edit_unsupported', async () => {
    const a = await h.newAccount();
    const err = await h
      .client(a.secret)
      .images.edit({
        model: NO_EDIT_MODEL,
        image: await toFile(png(), 'in.png', { type: 'image/png' }),
        prompt: 'x',
      })
      .catch((e: unknown) => e);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('edit_unsupported');
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 5 })).toHaveLength(1);
    await expectLedgerClean(h.redis.client());
  });
});
