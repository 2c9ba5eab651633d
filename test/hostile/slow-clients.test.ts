// Clients that hold sockets without using them (issue "Hardening" item 3): silent sockets and
// slow bodies are closed within the configured bounds, with an answer in the error shape; a
// stream whose reader stops reading is ended after PROXY_STREAM_STALL_MS — the engine call
// aborted, the generated part billed — instead of pinning the engine and the socket forever.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { ALIAS_MODEL, type Harness, startHarness } from '../proxy/harness.ts';

const HEADERS_MS = 1_000;
const REQUEST_MS = 2_000;
const STALL_MS = 500;

let h: Harness;
let port: number;
beforeAll(async () => {
  h = await startHarness({
    PROXY_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
    PROXY_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
    PROXY_STREAM_STALL_MS: String(STALL_MS),
  });
  port = Number(new URL(h.baseURL).port);
});
afterAll(async () => {
  await h?.stop();
});

/** Opens a socket and resolves once it closes, with what the server wrote and when. */
function watch(socket: Socket): Promise<{ data: string; closedAfterMs: number }> {
  const t0 = Date.now();
  let data = '';
  socket.on('data', (b) => {
    data += b.toString('latin1');
  });
  return new Promise((resolve) => {
    socket.on('error', () => {});
    socket.on('close', () => resolve({ data, closedAfterMs: Date.now() - t0 }));
  });
}

const open = () =>
  new Promise<Socket>((resolve) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
  });

describe('slow and silent clients', () => {
  it('20 silent sockets are closed after PROXY_HEADERS_TIMEOUT_MS, each told 408 in the error shape', async () => {
    const sockets = await Promise.all(Array.from({ length: 20 }, open));
    const results = await Promise.all(sockets.map(watch));
    for (const r of results) {
      // Within the bound plus Node's checking interval (a quarter of it) and some slack.
      expect(r.closedAfterMs).toBeLessThan(HEADERS_MS * 3);
      expect(r.data).toMatch(/^HTTP\/1\.1 408/);
      expect(r.data).toMatch(/x-request-id: req_[0-9a-f]{24}/i);
    }
  });

  it('20 slow bodies (a byte every 200 ms) are closed after PROXY_REQUEST_TIMEOUT_MS with 408', async () => {
    const sockets = await Promise.all(Array.from({ length: 20 }, open));
    const timers: NodeJS.Timeout[] = [];
    const results = sockets.map((s) => {
      const closed = watch(s);
      s.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${h.secret}\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{`,
      );
      timers.push(setInterval(() => s.writable && s.write(' '), 200));
      return closed;
    });
    try {
      for (const r of await Promise.all(results)) {
        expect(r.closedAfterMs).toBeLessThan(REQUEST_MS * 2 + 1_000);
        expect(r.data).toMatch(/^HTTP\/1\.1 408/);
      }
    } finally {
      for (const t of timers) clearInterval(t);
    }
  });

  it('a stream whose reader stops reading is ended after PROXY_STREAM_STALL_MS: engine aborted, the generated part billed', async () => {
    const a = await h.newAccount();
    const abortedBefore = h.sims.reduce((n, s) => n + s.stats().aborted, 0);
    for (const s of h.sims) s.setOptions({ itlMs: 0 });
    const socket = await open();
    const closed = watch(socket);
    const body = JSON.stringify({
      model: ALIAS_MODEL,
      messages: [{ role: 'user', content: 'write forever' }],
      max_tokens: 100_000, // ~20 MB of frames: more than loopback's socket buffers hold
      ignore_eos: true,
      stream: true,
    });
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.secret}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await new Promise((r) => setTimeout(r, 100));
    socket.pause(); // stops reading: the kernel buffers fill, then the proxy's writes back up
    // The proxy gives up on the reader: the engine call is aborted.
    const aborted = () => h.sims.reduce((n, s) => n + s.stats().aborted, 0) > abortedBefore;
    for (let i = 0; i < 300 && !aborted(); i++) await new Promise((r) => setTimeout(r, 50));
    for (const s of h.sims) s.setOptions({ itlMs: 1 });
    expect(aborted()).toBe(true);
    socket.resume(); // reading again finds the stream cut off, not finished
    const r = await closed;
    expect(r.data).toMatch(/^HTTP\/1\.1 200/);
    expect(r.data).not.toContain('data: [DONE]');
    await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec).toMatchObject({ type: 'charge', model: ALIAS_MODEL });
    expect(rec!.outputTokens).toBeGreaterThan(0);
    expect(rec!.outputTokens).toBeLessThan(100_000);
    expect(h.sims.reduce((n, s) => n + s.stats().aborted, 0)).toBeGreaterThan(abortedBefore);
    const metrics = await (await fetch(h.baseURL.replace(/\/v1$/, '/metrics'))).text();
    expect(metrics).toMatch(/mp_proxy_streams_stalled_total [1-9]/);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});
