// Clients that hold sockets without using them (issue "Hardening" item 3): silent sockets,
// slowloris headers and slow bodies are closed within the configured bounds, with an answer in
// the error shape; idle keep-alive connections are closed; a stream whose reader stops reading
// pins no more than a socket buffer's worth of bytes and is ended after PROXY_STREAM_STALL_MS —
// the engine call aborted, the generated part billed — while 500 idle connections are open and
// other clients are served; a large download whose reader stops is ended the same way. What is
// asserted is what a slow shared machine cannot make flaky: bounds with slack, and correctness.
import { connect, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { ALIAS_MODEL, CHAT_MODEL, type Harness, startHarness } from '../proxy/harness.ts';

const HEADERS_MS = 1_000;
const REQUEST_MS = 2_000;
const STALL_MS = 500;
const KEEP_ALIVE_MS = 1_000;

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

/** Resolves once the socket closes, with what the server wrote and when, from now. */
function watch(socket: Socket): Promise<{ data: string; bytes: number; closedAfterMs: number }> {
  const t0 = Date.now();
  let data = '';
  let bytes = 0;
  socket.on('data', (b: Buffer) => {
    bytes += b.length;
    if (data.length < 64 * 1024) data += b.toString('latin1');
  });
  return new Promise((resolve) => {
    socket.on('error', () => {});
    socket.on('close', () => resolve({ data, bytes, closedAfterMs: Date.now() - t0 }));
  });
}

const open = (to = port) =>
  new Promise<Socket>((resolve) => {
    const s = connect(to, '127.0.0.1', () => resolve(s));
  });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The proxy's end of the next connection made to it. */
const nextServerSocket = () =>
  new Promise<Socket>((resolve) => {
    const onConnection = (s: Socket) => {
      h.proxy.app.server.off('connection', onConnection);
      resolve(s);
    };
    h.proxy.app.server.on('connection', onConnection);
  });

/** A raw answer's status, and its body in the chat-completions error shape with a request id. */
function expectTimeoutAnswer(data: string): void {
  const [head = '', body = ''] = data.split('\r\n\r\n');
  expect(head).toMatch(/^HTTP\/1\.1 408 /);
  expect(head).toMatch(/x-request-id: req_[0-9a-f]{24}/i);
  expect(JSON.parse(body)).toEqual({
    error: {
      message: 'The request took too long to arrive.',
      type: 'invalid_request_error',
      param: null,
      code: 'request_timeout',
    },
  });
}

describe('slow and silent clients', () => {
  it('ERR-1 20 silent sockets are closed after PROXY_HEADERS_TIMEOUT_MS, each told 408 in the error shape', async () => {
    const sockets = await Promise.all(Array.from({ length: 20 }, () => open()));
    const results = await Promise.all(sockets.map(watch));
    for (const r of results) {
      // Within the bound plus Node's checking interval (a quarter of it) and some slack.
      expect(r.closedAfterMs).toBeLessThan(HEADERS_MS * 3);
      expectTimeoutAnswer(r.data);
    }
  });

  it('ERR-1 headers sent one byte at a time (slowloris) are cut off at PROXY_HEADERS_TIMEOUT_MS with 408', async () => {
    const head = `GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${h.secret}\r\nX-Pad: ${'p'.repeat(200)}\r\n\r\n`;
    const sockets = await Promise.all(Array.from({ length: 5 }, () => open()));
    const results = sockets.map(watch);
    let i = 0;
    // A byte every 50 ms: the whole head would take ~15 s, each byte well inside any idle timeout.
    const drip = setInterval(() => {
      for (const s of sockets) if (s.writable) s.write(head[i]!);
      i++;
    }, 50);
    try {
      for (const r of await Promise.all(results)) {
        expect(r.closedAfterMs).toBeLessThan(HEADERS_MS * 3);
        expectTimeoutAnswer(r.data);
      }
      expect(i).toBeLessThan(head.length); // cut off before the head was complete
    } finally {
      clearInterval(drip);
    }
  });

  it('20 slow bodies (a byte every 200 ms) are closed after PROXY_REQUEST_TIMEOUT_MS with 408', async () => {
    const sockets = await Promise.all(Array.from({ length: 20 }, () => open()));
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
        expectTimeoutAnswer(r.data);
      }
    } finally {
      for (const t of timers) clearInterval(t);
    }
  });

  it('beside 500 idle connections, a stalled stream reader pins at most a socket buffer and is ended after PROXY_STREAM_STALL_MS (engine aborted, generated part billed); other clients are served meanwhile', async () => {
    // 500 keep-alive connections, each left idle after one request.
    const idle = await Promise.all(
      Array.from({ length: 500 }, async () => {
        const s = await open();
        s.on('error', () => {});
        await new Promise<void>((resolve) => {
          s.once('data', () => resolve());
          s.write(`GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${h.secret}\r\n\r\n`);
        });
        return s;
      }),
    );
    const a = await h.newAccount();
    const abortedBefore = h.sims.reduce((n, s) => n + s.stats().aborted, 0);
    for (const s of h.sims) s.setOptions({ itlMs: 0 });
    // The proxy's end of the stalled reader's connection, to see what it buffers for it.
    const serverSide = nextServerSocket();
    const socket = await open();
    const server = await serverSide;
    const closed = watch(socket);
    const body = JSON.stringify({
      model: ALIAS_MODEL,
      messages: [{ role: 'user', content: 'write forever' }],
      max_tokens: 100_000, // ~20 MB of frames: far more than loopback's socket buffers hold
      ignore_eos: true,
      stream: true,
    });
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.secret}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await sleep(100);
    socket.pause(); // stops reading: the kernel buffers fill, then the proxy's writes back up
    let maxBuffered = 0;
    const sample = setInterval(() => {
      maxBuffered = Math.max(maxBuffered, server.writableLength);
    }, 5);
    // Meanwhile other clients are served, in full.
    const b = await h.newAccount();
    const others = Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        h.client(b.secret).chat.completions.create({
          model: CHAT_MODEL,
          messages: [{ role: 'user', content: `hello ${i}` }],
          max_tokens: 5,
        }),
      ),
    );
    // The proxy gives up on the reader: the engine call is aborted.
    const aborted = () => h.sims.reduce((n, s) => n + s.stats().aborted, 0) > abortedBefore;
    for (let i = 0; i < 300 && !aborted(); i++) await sleep(50);
    clearInterval(sample);
    for (const s of h.sims) s.setOptions({ itlMs: 1 });
    expect(aborted()).toBe(true);
    // What the proxy held for the stalled reader: the socket's buffer up to its high-water mark
    // and one engine read past it (a socket read is at most 64 KiB; the relay pauses the engine
    // then), with room for rewritten frames — not the ~20 MB the engine would have sent.
    expect(maxBuffered).toBeGreaterThan(0);
    expect(maxBuffered).toBeLessThan(server.writableHighWaterMark + 128 * 1024);
    for (const r of await others) expect(r.choices[0]!.message.content!.length).toBeGreaterThan(0);
    socket.resume(); // reading again finds the stream cut off, not finished
    const r = await closed;
    expect(r.data).toMatch(/^HTTP\/1\.1 200/);
    expect(r.data).not.toContain('data: [DONE]');
    await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec).toMatchObject({ type: 'charge', model: ALIAS_MODEL });
    expect(rec!.outputTokens).toBeGreaterThan(0);
    expect(rec!.outputTokens).toBeLessThan(100_000);
    const metrics = await (await fetch(h.metricsURL)).text();
    expect(metrics).toMatch(/mp_proxy_streams_stalled_total [1-9]/);
    await expectLedgerClean(h.redis.client(), [a.accountId, b.accountId]);
    // The 500 idle connections were open throughout (the keep-alive timeout is 65 s here).
    expect(idle.filter((s) => s.destroyed || s.readyState !== 'open')).toHaveLength(0);
    for (const s of idle) s.destroy();
  });

  describe('a large download', () => {
    // More than loopback's socket buffers absorb (here up to 32 MB received and 4 MB sent).
    const SIZE = 64 * 1024 * 1024;
    let path: string;
    beforeAll(async () => {
      const { store } = h.proxy.ctx.media;
      const chunk = Buffer.alloc(1024 * 1024, 7);
      const body = Readable.from(
        (function* () {
          for (let i = 0; i < SIZE / chunk.length; i++) yield chunk;
        })(),
      );
      await store.put('videos/large.mp4', body, 'video/mp4');
      const url = new URL(await store.signedUrl('videos/large.mp4', Date.now() + 600_000, 'http://x'));
      path = url.pathname + url.search;
    });
    const get = async () => {
      const server = nextServerSocket();
      const s = await open();
      const done = watch(s);
      s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      return { s, done, server: await server };
    };

    it('whose reader stops reading is ended after PROXY_STREAM_STALL_MS, not held for ever', async () => {
      const { s, done, server } = await get();
      await new Promise((r) => s.once('data', r));
      s.pause();
      const t0 = Date.now();
      // The proxy closes its end (the client, not reading, cannot see it until it reads again).
      const closed = await Promise.race([
        new Promise((r) => server.once('close', () => r(true))),
        sleep(STALL_MS * 20).then(() => false),
      ]);
      expect(closed, 'the proxy never ended the download').toBe(true);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(STALL_MS);
      s.resume(); // reading again finds the download cut short
      const r = await done;
      expect(r.data).toMatch(/^HTTP\/1\.1 200/);
      expect(r.bytes).toBeLessThan(SIZE);
      const metrics = await (await fetch(h.metricsURL)).text();
      expect(metrics).toMatch(/mp_proxy_responses_stalled_total [1-9]/);
    });

    it('whose reader pauses for less than PROXY_STREAM_STALL_MS gets the whole file', async () => {
      const { s, done } = await get();
      let received = 0;
      s.on('data', (b: Buffer) => {
        received += b.length;
      });
      for (let i = 0; i < 3 && received < SIZE; i++) {
        s.pause();
        await sleep(STALL_MS / 3);
        s.resume();
        await sleep(20);
      }
      for (let i = 0; i < 400 && received < SIZE + 100; i++) await sleep(25);
      s.destroy();
      const r = await done;
      expect(r.data).toMatch(/^HTTP\/1\.1 200/);
      expect(r.bytes).toBeGreaterThan(SIZE);
    });
  });
});

describe('idle keep-alive connections', () => {
  let k: Harness;
  beforeAll(async () => {
    k = await startHarness({ PROXY_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_MS) });
  });
  afterAll(async () => {
    await k?.stop();
  });

  it('are closed by the server after PROXY_KEEP_ALIVE_TIMEOUT_MS, once their last reply was sent', async () => {
    const sockets = await Promise.all(
      Array.from({ length: 10 }, () => open(Number(new URL(k.baseURL).port))),
    );
    const results = sockets.map(async (s) => {
      const closed = watch(s);
      await new Promise<void>((resolve) => {
        s.once('data', () => resolve());
        s.write(`GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${k.secret}\r\n\r\n`);
      });
      const repliedAt = Date.now();
      const r = await closed;
      return { ...r, idleMs: Date.now() - repliedAt };
    });
    for (const r of await Promise.all(results)) {
      expect(r.data).toMatch(/^HTTP\/1\.1 200/);
      expect(r.data).toMatch(/keep-alive: timeout=1\b/i);
      // Never before the timeout; well within it plus a loaded machine's slack.
      expect(r.idleMs).toBeGreaterThanOrEqual(KEEP_ALIVE_MS - 50);
      expect(r.idleMs).toBeLessThan(KEEP_ALIVE_MS * 5);
    }
  });
});
