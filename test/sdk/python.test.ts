// The official Python SDKs (`openai`, `anthropic`) against the real proxy: what they send differs
// from the TypeScript SDKs (videos and edits as multipart, their own SSE parsers), so they are
// driven too. The venv is made by test/sdk/python-sdks.sh and cached outside the repo.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, type Harness, imageModel, startHarness, videoModel } from '../proxy/harness.ts';

const IMAGE = 'Img/Py-Painter';
const VIDEO = 'Vid/Py-Maker';
const here = new URL('./', import.meta.url).pathname;

let h: Harness;
let python: string;
beforeAll(async () => {
  python = execFileSync(`${here}python-sdks.sh`, { encoding: 'utf8' }).trim();
  h = await startHarness(
    { VIDEO_POLL_MS: '40' },
    {
      entries: (endpoints) => [
        imageModel(IMAGE, endpoints, { edit: true }),
        videoModel(VIDEO, endpoints, { imageToVideo: true }),
      ],
    },
  );
  for (const s of h.sims) s.setOptions({ videoQueueMs: 20, videoMsPerSecond: 30 });
});
afterAll(async () => {
  await h?.stop();
});

describe('the official Python SDKs', () => {
  it('MSG-1 MSG-2 MSG-7 IMG-1 IMG-3 VID-1 openai and anthropic from Python: chat, responses, images, edits, videos (multipart), messages, streams, tools, count_tokens, errors', async () => {
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
