// The official Python SDKs (`openai`, `anthropic`) against the real proxy: what they send differs
// from the TypeScript SDKs (videos and edits as multipart, their own SSE parsers), so they are
// driven too. The venv is made by test/sdk/python-sdks.sh and cached outside the repo.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../core/free-port.ts';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import {
  CHAT_MODEL,
  chatModel,
  type Harness,
  imageModel,
  startHarness,
  videoModel,
} from '../proxy/harness.ts';

const IMAGE = 'Img/Py-Painter';
const VIDEO = 'Vid/Py-Maker';
const VISION = 'Org/Py-Vision';
/** A chat model whose only engine is not there: every call to it is the 500 the chat surface gives. */
const DOWN = 'Org/Py-Down';
const here = new URL('./', import.meta.url).pathname;

let h: Harness;
let python: string;
beforeAll(async () => {
  python = execFileSync(`${here}python-sdks.sh`, ['--check'], { encoding: 'utf8' }).trim();
  const downPort = await freePort(); // nothing listens there
  h = await startHarness(
    { VIDEO_POLL_MS: '40' },
    {
      entries: (endpoints) => [
        imageModel(IMAGE, endpoints, { edit: true }),
        videoModel(VIDEO, endpoints, { imageToVideo: true }),
        chatModel(VISION, endpoints, { vision: true }),
        chatModel(DOWN, [{ url: `http://127.0.0.1:${downPort}` }]),
      ],
    },
  );
  // 4 ms between tokens: the stream the script cuts after three deltas (of up to 256) is still
  // being generated when it leaves, however slowly this machine runs Python.
  for (const s of h.sims) s.setOptions({ videoQueueMs: 20, videoMsPerSecond: 30, itlMs: 4 });
});
afterAll(async () => {
  await h?.stop();
});

describe('the official Python SDKs', () => {
  it('MSG-1 MSG-2 MSG-7 IMG-1 IMG-3 VID-1 ERR-1 ERR-2 openai and anthropic from Python: chat, responses (an image input, a cancelled stream billed for what was generated, every error code of the chat surface), images, edits, videos (multipart), messages, streams, tools, count_tokens, errors', async () => {
    // Accounts for what the script checks by key: a stream it cuts, no currency, no credit.
    const cut = await h.newAccount();
    const noCurrency = await h.newAccount({ country: null });
    const broke = await h.newAccount({ credit: '0' });
    // Not execFileSync: the proxy under test runs in this very process and must keep serving.
    const { stdout } = await promisify(execFile)(python, [`${here}smoke.py`], {
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        ...process.env,
        MP_BASE: h.baseURL.replace(/\/v1$/, ''),
        MP_KEY: h.secret,
        MP_CHAT: CHAT_MODEL,
        MP_IMAGE: IMAGE,
        MP_VIDEO: VIDEO,
        MP_VISION: VISION,
        MP_DOWN: DOWN,
        MP_KEY_CUT: cut.secret,
        MP_KEY_NO_CURRENCY: noCurrency.secret,
        MP_KEY_BROKE: broke.secret,
      },
    });
    const out = JSON.parse(stdout);
    expect(out.chat.model).toBe(CHAT_MODEL);
    expect(out.chat_stream.length).toBeGreaterThan(0);
    expect(out.images).toHaveLength(2);
    expect((await fetch(out.images[0])).status).toBe(200);
    expect(Buffer.from(out.edit_png, 'base64').subarray(0, 4).toString('latin1')).toBe('\x89PNG');
    expect(out.video_created).toBe('queued');
    expect(out.video_status).toBe('completed');
    expect(out.video_head).toBe('ftyp');
    expect(out.videos_listed).toBe(1);
    expect(out.message.id).toMatch(/^msg_/);
    expect(out.message.output_tokens).toBe(8);
    expect(out.message_stream.text).toBe(out.message_stream.final);
    // The Responses API through the Python SDK (issue 25).
    expect(out.responses.id).toMatch(/^resp_/);
    expect(out.responses.retrieved).toBe(out.responses.text);
    expect(out.responses.stream_deltas.length).toBeGreaterThan(0);
    expect(out.responses.stream_final).toBe(out.responses.stream_deltas);
    expect(out.responses.call).toBe('get_weather');
    expect(out.responses.answer.length).toBeGreaterThan(0);
    expect(out.responses.follow_prev).toBe(out.responses.id);
    expect(typeof out.responses.json.city).toBe('string');
    expect(out.responses.auth).toBe(401);
    expect(out.responses.image.length).toBeGreaterThan(0);
    const imageSent = h.sims
      .flatMap((s) => s.received())
      .find((r) => (r.json as { model?: string } | undefined)?.model === VISION);
    expect(JSON.stringify(imageSent?.json)).toContain('"type":"image_url"');
    // Every error code of the chat surface, as the Python SDK's own error classes.
    expect(out.responses.errors).toEqual({
      invalid_request: expect.objectContaining({
        class: 'BadRequestError',
        status: 400,
        code: 'invalid_request',
      }),
      invalid_api_key: expect.objectContaining({
        class: 'AuthenticationError',
        status: 401,
        code: 'invalid_api_key',
      }),
      billing_currency_unset: expect.objectContaining({
        class: 'PermissionDeniedError',
        status: 403,
        code: 'billing_currency_unset',
      }),
      model_not_found: expect.objectContaining({
        class: 'NotFoundError',
        status: 404,
        code: 'model_not_found',
      }),
      insufficient_quota: expect.objectContaining({
        class: 'RateLimitError',
        status: 429,
        code: 'insufficient_quota',
      }),
      server_error: expect.objectContaining({
        class: 'InternalServerError',
        status: 500,
        code: 'server_error',
      }),
    });
    for (const e of Object.values(out.responses.errors) as { request_id: string }[])
      expect(e.request_id).toMatch(/^req_/);
    // The stream the client left after three deltas: billed for what was generated, not the hold.
    expect(out.responses.cut_deltas).toBe(3);
    await h.settled(cut.accountId);
    const [cutCharge] = (await usageRecords(h.redis.client(), cut.accountId, { count: 5 })).filter(
      (r) => r.type === 'charge',
    );
    expect(cutCharge!.outputTokens).toBeGreaterThanOrEqual(3);
    expect(cutCharge!.outputTokens).toBeLessThan(256);
    expect(out.tool_use).toEqual(['get_weather']);
    expect(out.count_tokens).toBeGreaterThan(0);
    expect(out.auth_error.status).toBe(401);
    expect(out.auth_error.request_id).toMatch(/^req_/);
    const sent = h.sims
      .flatMap((s) => s.received())
      .filter((r) => r.path === '/v1/videos' && r.method === 'POST');
    expect(sent.some((r) => String(r.headers['content-type']).startsWith('multipart/form-data'))).toBe(true);
    await expectLedgerClean(h.redis.client());
  }, 90_000);
});
