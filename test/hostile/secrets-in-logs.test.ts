// No secret reaches the logs (issue "Hardening" item 6): a whole run at trace level — good keys,
// wrong keys, a key pasted into the URL's query string, x-api-key, a rotated key, failures — and
// then a scan of every line for every secret the run used.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALIAS_MODEL, CHAT_MODEL, type Harness, startHarness } from '../proxy/harness.ts';

let h: Harness;
let lines = '';
beforeAll(async () => {
  h = await startHarness(
    {},
    {
      logStream: new Writable({
        write(chunk, _enc, done) {
          lines += chunk.toString();
          done();
        },
      }),
    },
  );
});
afterAll(async () => {
  await h?.stop();
});

describe('secrets never reach the logs', () => {
  it('a whole run at trace level mentions no key, in headers, query strings or bodies', async () => {
    const other = await h.newAccount();
    const origin = h.baseURL.replace(/\/v1$/, '');
    const auth = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
    const chat = JSON.stringify({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 3,
    });
    await fetch(`${h.baseURL}/chat/completions`, { method: 'POST', headers: auth(h.secret), body: chat });
    await fetch(`${h.baseURL}/chat/completions`, {
      method: 'POST',
      headers: auth(`${h.secret}x`),
      body: chat,
    });
    await fetch(`${h.baseURL}/models?api_key=${other.secret}&key=${h.secret}`, { headers: auth(h.secret) });
    await fetch(`${h.baseURL}/models/${encodeURIComponent(other.secret)}`, { headers: auth(h.secret) });
    await fetch(`${origin}/v1/messages?x-api-key=${other.secret}`, {
      method: 'POST',
      headers: { 'x-api-key': other.secret, 'content-type': 'application/json' },
      body: JSON.stringify({ model: CHAT_MODEL, max_tokens: 3, messages: [{ role: 'user', content: 'hi' }] }),
    });
    await fetch(`${h.baseURL}/chat/completions`, {
      method: 'POST',
      headers: auth(h.secret),
      body: JSON.stringify({
        model: CHAT_MODEL,
        messages: [{ role: 'user', content: `my key is ${other.secret}` }],
        max_tokens: 3,
      }),
    });
    for (const s of h.sims) s.setOptions({ failBeforeFirstByte: 1 });
    await fetch(`${h.baseURL}/chat/completions`, { method: 'POST', headers: auth(other.secret), body: chat });
    for (const s of h.sims) s.setOptions({ failBeforeFirstByte: 0 });
    const { secret: rotated } = await h.keys.rotate(other.accountId, other.keyId);
    await fetch(`${h.baseURL}/chat/completions`, { method: 'POST', headers: auth(other.secret), body: chat });
    await fetch(`${h.baseURL}/chat/completions`, {
      method: 'POST',
      headers: auth(rotated),
      body: JSON.stringify({
        model: ALIAS_MODEL,
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 3,
      }),
    });
    await h.quiesce();

    expect(lines.length).toBeGreaterThan(1_000); // it did log: requests, the 500, the warnings
    expect(lines).toContain('api_key=[redacted]');
    for (const secret of [h.secret, other.secret, rotated, h.config.MODELPLANE_KEK]) {
      expect(lines.includes(secret), `a secret (${secret.slice(0, 14)}…) is in the logs`).toBe(false);
      expect(lines.includes(secret.slice(-24)), 'part of a secret is in the logs').toBe(false);
    }
  });
});
