import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseFailure } from './failure.ts';
import { type Simulator, startSimulator } from './server.ts';

let sim: Simulator;
let client: OpenAI;

beforeAll(async () => {
  sim = await startSimulator({ ttftMs: 1, itlMs: 1 });
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
afterAll(() => sim.close());

const chat = (fail: string, stream: boolean) =>
  fetch(`${sim.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-sim-fail': fail },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 20, stream }),
  });

describe('failure injection', () => {
  it('before-first-byte: HTTP 500 with an OpenAI error body (stream or not)', async () => {
    for (const stream of [false, true]) {
      const res = await chat('before-first-byte', stream);
      expect(res.status).toBe(500);
      expect(await res.json()).toMatchObject({ error: { type: 'server_error', code: 'server_error' } });
    }
    expect(sim.stats().injectedFailures['before-first-byte']).toBe(2);
  });

  it('reset: the connection drops before any response', async () => {
    await expect(chat('reset', true)).rejects.toThrow();
  });

  it('mid-stream: some content frames arrive, then the connection is cut without [DONE]', async () => {
    const stream = await client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 20, stream: true },
      { headers: { 'x-sim-fail': 'mid-stream' } },
    );
    let content = '';
    await expect(
      (async () => {
        for await (const c of stream) content += c.choices[0]?.delta.content ?? '';
      })(),
    ).rejects.toThrow();
    expect(content.length).toBeGreaterThan(0);
  });

  it('mid-stream on a non-stream request: status 200 then a truncated body', async () => {
    const res = await chat('mid-stream', false);
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });

  it('error-frame: an in-band error frame (status 200) that the OpenAI client raises', async () => {
    const res = await chat('error-frame', true);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('data: {"error":');
    expect((await chat('error-frame', false)).status).toBe(500);
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    const stream = await client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 20, stream: true },
      { headers: { 'x-sim-fail': 'error-frame' } },
    );
    await expect(
      (async () => {
        for await (const _ of stream) {
          // drain
        }
      })(),
    ).rejects.toThrow(/simulated engine failure/);
  });

  it('configured probabilities apply per request; x-sim-fail: none overrides them; typos are 400', async () => {
    sim.setOptions({ failBeforeFirstByte: 1 });
    expect((await chat('none', false)).status).toBe(200);
    const res = await fetch(`${sim.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'e', input: 'x' }),
    });
    expect(res.status).toBe(500);
    sim.setOptions({ failBeforeFirstByte: 0 });
    expect((await chat('sometimes', false)).status).toBe(400);
    expect(() => sim.setOptions({ failMidStream: 2 })).toThrow(RangeError);
  });

  it('chooseFailure draws from the probabilities', () => {
    const p = { failBeforeFirstByte: 0.5, failMidStream: 0.5 };
    expect(chooseFailure(undefined, p, () => 0.1)).toBe('before-first-byte');
    expect(chooseFailure(undefined, p, () => 0.9)).toBeNull();
    expect(chooseFailure(undefined, { failBeforeFirstByte: 0, failMidStream: 1 }, () => 0.3)).toBe(
      'mid-stream',
    );
  });
});
