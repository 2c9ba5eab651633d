// Uploads that must not be read to their end (IMG-3, IMG-4, VID-1): an endless file, an endless
// field, a model that cannot edit named after a file has begun. Each is sent by hand on a raw
// socket, chunked, for as long as the proxy reads; the 400 must come at once, naming the limit,
// the proxy must have read little more than the limit (its side of the connection counts), the
// connection must close, the spool must be empty, nothing charged — and the proxy keeps serving.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { gradientPng } from '../../engines/simulator/media/png.ts';
import { LINGER } from '../../proxy/media/lingering-close.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { type RawPart, rawUpload, watchConnections } from '../helpers/raw-upload.ts';
import { until } from '../helpers/until.ts';
import { CHAT_MODEL, type Harness, imageModel, startHarness, videoModel } from './harness.ts';

const EDIT_MODEL = 'Img/Editor';
const NO_EDIT_MODEL = 'Img/Painter-Only';
const VIDEO_MODEL = 'Vid/Text-Only';
const I2V_MODEL = 'Vid/From-Image';
const MB = 1024 * 1024;

let h: Harness;
let serverSide: ReturnType<typeof watchConnections>;
beforeAll(async () => {
  h = await startHarness(
    {},
    {
      entries: (endpoints) => [
        imageModel(EDIT_MODEL, endpoints, { edit: true }),
        imageModel(NO_EDIT_MODEL, endpoints, { perImage: '0.01' }),
        videoModel(VIDEO_MODEL, endpoints),
        videoModel(I2V_MODEL, endpoints, { perSecond: '0.2', imageToVideo: true }),
      ],
    },
  );
  serverSide = watchConnections(h.proxy.app.server);
});
afterAll(async () => {
  await h?.stop();
});

const upload = (path: string, parts: RawPart[], secret: string) =>
  rawUpload({
    url: h.baseURL,
    path: `/v1${path}`,
    headers: { authorization: `Bearer ${secret}` },
    parts,
    serverSide,
  });

const png = gradientPng(120, 8, 8);

/** What every cut-off upload must show: answered at once, little read, closed, nothing kept. */
async function expectCutOff(
  r: Awaited<ReturnType<typeof rawUpload>>,
  o: { readAtMost: number; accountId: string; message: RegExp; code?: string },
) {
  const error = (JSON.parse(r.body) as { error: { message: string; code: string } }).error;
  expect(r.status).toBe(400);
  expect(error.message).toMatch(o.message);
  if (o.code) expect(error.code).toBe(o.code);
  expect(r.headers['x-request-id']).toMatch(/^req_[0-9a-f]{24}$/);
  expect(r.headers.connection).toBe('close');
  expect(r.answeredMs).toBeLessThan(2_000);
  expect(r.serverBytesReadBeforeAnswer).toBeLessThan(o.readAtMost);
  // After the answer, a bounded drain (RFC 9112 §9.6) so the client reads the answer, not a reset.
  expect(r.serverBytesRead).toBeLessThan(o.readAtMost + LINGER.bytes);
  expect(r.serverClosed).toBe(true);
  const uploads = join(h.config.PROXY_DATA_DIR, 'uploads');
  // The temporary file of the part read so far is removed as the request ends, which may be just
  // after the answer reached the client: nothing may be kept, checked once that cleanup had time.
  await until(
    () => !existsSync(uploads) || readdirSync(uploads).length === 0,
    "the cut-off upload's temporary files removed",
    10_000,
  );
  await h.settled(o.accountId);
  expect((await usageRecords(h.redis.client(), o.accountId, { count: 5 })).map((e) => e.type)).toEqual([
    'topup',
  ]);
  await expectLedgerClean(h.redis.client(), [o.accountId]);
}

/** The proxy still answers: an edit through the official SDK's shape of form. */
async function expectServing(secret: string) {
  const fd = new FormData();
  fd.set('model', EDIT_MODEL);
  fd.set('prompt', 'still here');
  fd.set('image', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'a.png');
  const res = await fetch(`${h.baseURL}/images/edits`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}` },
    body: fd,
  });
  expect(res.status).toBe(200);
  const chat = await h.client(secret).chat.completions.create({
    model: CHAT_MODEL,
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 4,
  });
  expect(chat.choices[0]!.message.content).toBeTruthy();
}

describe('uploads cut off at the limit', () => {
  it('IMG-3 an endless file: 400 naming 20 MB at once, about 20 MB read, the connection closed, nothing kept or charged', async () => {
    const a = await h.newAccount();
    const r = await upload(
      '/images/edits',
      [
        { name: 'model', data: EDIT_MODEL },
        { name: 'prompt', data: 'x' },
        { name: 'image', filename: 'endless.png', data: 'endless' },
      ],
      a.secret,
    );
    await expectCutOff(r, { readAtMost: 21 * MB, accountId: a.accountId, message: /at most 20 MB/ });
    expect(r.serverBytesRead).toBeGreaterThan(20 * MB);
    await expectServing(a.secret);
  });

  it('IMG-3 an endless text field: 400 naming the field limit, under 1 MB read', async () => {
    const a = await h.newAccount();
    const r = await upload(
      '/images/edits',
      [
        { name: 'model', data: EDIT_MODEL },
        { name: 'prompt', data: 'endless' },
      ],
      a.secret,
    );
    await expectCutOff(r, { readAtMost: MB, accountId: a.accountId, message: /longer than 128 KB/ });
    await expectServing(a.secret);
  });

  it("IMG-3 an endless part header: cut off as a field's bytes", async () => {
    const a = await h.newAccount();
    const r = await upload(
      '/images/edits',
      [
        { name: 'model', data: EDIT_MODEL },
        { name: 'x', data: 'endless-headers' },
      ],
      a.secret,
    );
    await expectCutOff(r, { readAtMost: MB, accountId: a.accountId, message: /part's headers/ });
  });

  it('IMG-4 edit_unsupported with model first: refused before any of the file is kept', async () => {
    const a = await h.newAccount();
    const r = await upload(
      '/images/edits',
      [
        { name: 'model', data: NO_EDIT_MODEL },
        { name: 'image', filename: 'endless.png', data: 'endless' },
      ],
      a.secret,
    );
    await expectCutOff(r, {
      readAtMost: 512 * 1024,
      accountId: a.accountId,
      message: /cannot edit/,
      code: 'edit_unsupported',
    });
  });

  it('IMG-4 edit_unsupported with the image first (curl -F image=@… -F model=…): refused the moment model arrives, the rest unread', async () => {
    const a = await h.newAccount();
    const r = await upload(
      '/images/edits',
      [
        { name: 'image', filename: 'first.png', data: Buffer.alloc(MB, 1) },
        { name: 'model', data: NO_EDIT_MODEL },
        // Whatever follows model is never read: another image that never ends.
        { name: 'image[]', filename: 'endless.png', data: 'endless' },
      ],
      a.secret,
    );
    await expectCutOff(r, {
      readAtMost: 2 * MB,
      accountId: a.accountId,
      message: /cannot edit/,
      code: 'edit_unsupported',
    });
  });

  it('IMG-4 a model that cannot edit, image first and a normal form end: 400 edit_unsupported', async () => {
    const fd = new FormData();
    fd.set('image', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'a.png');
    fd.set('prompt', 'x');
    fd.set('model', NO_EDIT_MODEL);
    const res = await fetch(`${h.baseURL}/images/edits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.secret}` },
      body: fd,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('edit_unsupported');
  });

  it('VID-1 an endless input_reference: 400 naming 20 MB at once, no job, nothing charged', async () => {
    const a = await h.newAccount();
    const r = await upload(
      '/videos',
      [
        { name: 'model', data: I2V_MODEL },
        { name: 'prompt', data: 'x' },
        { name: 'input_reference', filename: 'endless.png', data: 'endless' },
      ],
      a.secret,
    );
    await expectCutOff(r, { readAtMost: 21 * MB, accountId: a.accountId, message: /at most 20 MB/ });
    expect((await h.client(a.secret).videos.list()).data).toEqual([]);
  });

  it('VID-1 input_reference before a model that cannot start from an image: refused when model arrives', async () => {
    const a = await h.newAccount();
    const r = await upload(
      '/videos',
      [
        { name: 'input_reference', filename: 'ref.png', data: png },
        { name: 'model', data: VIDEO_MODEL },
        { name: 'prompt', data: 'endless' },
      ],
      a.secret,
    );
    await expectCutOff(r, { readAtMost: MB, accountId: a.accountId, message: /cannot start from an image/ });
  });

  it('IMG-3 fetch (undici, duplex half) with a body that never ends gets the 400 within two seconds', async () => {
    const boundary = 'endless-fetch-boundary';
    const head = new TextEncoder().encode(
      `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${EDIT_MODEL}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`,
    );
    let started = false;
    const zeros = new Uint8Array(256 * 1024);
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        c.enqueue(started ? zeros : head);
        started = true;
      },
    });
    const t0 = performance.now();
    const res = await fetch(`${h.baseURL}/images/edits`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${h.secret}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
      },
      body,
      duplex: 'half',
    } as RequestInit);
    const json = (await res.json()) as { error: { message: string; param: string } };
    expect(performance.now() - t0).toBeLessThan(2_000);
    expect(res.status).toBe(400);
    expect(json.error).toMatchObject({ param: 'image', message: expect.stringMatching(/at most 20 MB/) });
  });

  it('a refused key with an endless body: 401 at once and the connection closed, the body unread', async () => {
    const r = await upload(
      '/images/edits',
      [{ name: 'image', filename: 'endless.png', data: 'endless' }],
      'sk-service-000000000000000000000000000000000000000000000000',
    );
    expect(r.status).toBe(401);
    expect(r.headers.connection).toBe('close');
    expect(r.answeredMs).toBeLessThan(2_000);
    expect(r.serverBytesReadBeforeAnswer).toBeLessThan(4 * MB);
    expect(r.serverBytesRead).toBeLessThan(4 * MB + LINGER.bytes);
    expect(r.serverClosed).toBe(true);
  });
});
