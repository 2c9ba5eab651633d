// Shutdown with clients that keep idle keep-alive connections (issue "Hardening" item 5): once the
// running calls are done, idle connections are closed and shutdown returns, rather than waiting
// out PROXY_SHUTDOWN_GRACE_MS (or the keep-alive timeout) for clients that will send nothing.
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

const GRACE_MS = 20_000;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ PROXY_SHUTDOWN_GRACE_MS: String(GRACE_MS) });
});
afterAll(async () => {
  await h?.stop();
});

describe('shutdown', () => {
  it('closes idle keep-alive connections as soon as the running calls end, well before the grace period', async () => {
    const origin = h.baseURL.replace(/\/v1$/, '');
    // Ten clients, each with a keep-alive connection left idle after a request.
    const agents = Array.from({ length: 10 }, () => new Agent({ keepAliveTimeout: 600_000 }));
    for (const dispatcher of agents) {
      const res = await request(`${origin}/v1/models`, {
        headers: { authorization: `Bearer ${h.secret}` },
        dispatcher,
      });
      await res.body.text();
    }
    // One stream still running when shutdown begins (about half a second more).
    for (const s of h.sims) s.setOptions({ itlMs: 25 });
    const stream = await h.client().chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'a story' }],
      max_tokens: 20,
      stream: true,
    });
    const streamed = (async () => {
      let text = '';
      for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
      return text;
    })();
    await new Promise((r) => setTimeout(r, 50));
    const t0 = Date.now();
    await h.proxy.shutdown();
    const tookMs = Date.now() - t0;
    expect((await streamed).length).toBeGreaterThan(0); // the running stream finished, not cut
    expect(tookMs).toBeLessThan(GRACE_MS / 4);
    for (const a of agents) await a.close();
    await expectLedgerClean(h.redis.client());
  });
});
