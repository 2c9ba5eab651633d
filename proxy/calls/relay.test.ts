// The one stream relay against a fake charge (no Redis) and an engine body fed by hand, in a real
// fastify server on loopback with the chat-completions translator: the rules of its opening
// comment — whatever ends a stream it is billed from the last usage the engine reported, settled
// before the last bytes leave; an engine failure after the head is an in-band error with status
// 200 still; a client that leaves stops the engine and is billed for what was generated;
// the usage frame reaches the client only when it asked (include_usage), the engine always asked.
import { request as httpRequest } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type CatalogueEntry, catalogueEntrySchema } from '../../core/catalogue/index.ts';
import { until } from '../../test/helpers/until.ts';
import { KeyCache, type KeyLease } from '../auth/key-cache.ts';
import type { CallCharge } from '../billing/charge.ts';
import type { ProxyContext } from '../context.ts';
import { chatDialect } from '../dialects/openai/text.ts';
import { EngineBody } from '../engine/body.ts';
import type { EngineCall, EngineDeps } from '../engine/call.ts';
import '../plugins/auth.ts'; // the request's principal and keyLease declarations
import { linkRequestAbort } from '../request-abort.ts';
import { firstStreamEvent } from './engine-stream.ts';
import { relay } from './relay.ts';

const entry: CatalogueEntry = catalogueEntrySchema.parse({
  id: 'Chat-Model',
  kind: 'chat',
  servedName: 'engine-model',
  pricing: { USD: { input: '1', output: '2' } },
  created: 0,
});
const price = { input: '1', output: '2' };

/** An engine chunk as vLLM sends it with continuous_usage_stats: `completion` tokens so far. */
const content = (text: string, completion: number) =>
  `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"engine-model","choices":[{"index":0,"delta":{"content":"${text}"},"finish_reason":null}],"usage":{"prompt_tokens":5,"completion_tokens":${completion},"total_tokens":${5 + completion}}}\n\n`;
const usageOnly = (completion: number) =>
  `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"engine-model","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":${completion},"total_tokens":${5 + completion}}}\n\n`;
const DONE = 'data: [DONE]\n\n';

interface Settled {
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  cost: number;
  /** Whether the response was already ended when the settlement was made (it must not be). */
  endedBefore: boolean;
}

/** Per request: the engine body the test feeds, the settlement, and whether the engine was aborted. */
let engine: EngineBody | null;
let settled: Settled[];
let engineAborted: string[];
/** The stream_options the client sent. */
let streamOptions: { include_usage?: boolean } | undefined;
/** Runs the delivery (the journal write done) — at once unless a test holds it. */
let journal: (deliver: () => void) => void;

const keys = new KeyCache({ lookup: async () => null, ttlMs: 0 });
const noop = () => {};
const ctx = {
  config: { PROXY_STREAM_STALL_MS: 5_000 },
  metrics: {
    ttfb: { observe: noop },
    overhead: { observe: noop },
    streamsStalled: { inc: noop },
    engineErrors: { inc: noop },
  },
} as unknown as ProxyContext;
const engineDeps = {
  health: { recordFailure: noop },
  metrics: { engineErrors: { inc: noop } },
} as unknown as EngineDeps;

let app: FastifyInstance;
let port: number;

beforeAll(async () => {
  app = Fastify();
  app.decorateRequest('keyLease', null as unknown as KeyLease);
  app.decorateRequest('principal', null as unknown as never);
  app.addHook('onRequest', async (request) => {
    request.keyLease = keys.track('h');
    request.principal = {
      accountId: 'acct',
      keyId: 'key',
      secretHash: 'h',
      currency: 'USD',
      grants: new Set(),
      spendLimit: null,
    };
  });
  app.post('/stream', async (request, reply) => {
    const body = new EngineBody({ pause: noop, resume: noop, abort: (r) => engineAborted.push(r.message) });
    const call = {
      statusCode: 200,
      body,
      url: 'http://engine',
      sentAt: performance.now(),
      headersAt: performance.now(),
      release: noop,
    } as EngineCall;
    const abort = linkRequestAbort(request, reply);
    // As the engine client does: a cancelled call aborts the engine's body.
    abort.cancel.onAbort((reason) =>
      body.destroy(reason instanceof Error ? reason : new Error(String(reason))),
    );
    engine = body;
    const start = await firstStreamEvent(engineDeps, abort.cancel, async () => call);
    const res = reply.raw;
    const charge = {
      allowance: 100,
      trackProgress: noop,
      settle(cost: number, usage: { inputTokens?: number; outputTokens?: number }, deliver: () => void) {
        settled.push({
          inputTokens: usage.inputTokens,
          outputTokens: usage.outputTokens,
          cost,
          endedBefore: res.writableEnded,
        });
        journal(deliver);
      },
    } as unknown as CallCharge;
    await relay(ctx, request, reply, {
      start,
      abort,
      charge,
      entry,
      price,
      promptBytes: 10,
      translator: chatDialect(entry, streamOptions).translator(),
      early: undefined,
    });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as { port: number }).port;
});
afterAll(async () => {
  await app?.close();
});
beforeEach(() => {
  engine = null;
  settled = [];
  engineAborted = [];
  streamOptions = undefined;
  journal = (deliver) => deliver();
});

/** Opens a stream; `received` grows as bytes arrive; `done` resolves with the status at the end. */
function open() {
  const out = { received: '', status: 0, cut: () => {}, done: Promise.resolve() };
  out.done = new Promise<void>((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/stream' }, (res) => {
      out.status = res.statusCode ?? 0;
      res.setEncoding('utf8');
      res.on('data', (s: string) => {
        out.received += s;
      });
      res.on('end', () => resolve());
      res.on('error', () => resolve());
      res.on('close', () => resolve());
    });
    req.on('error', () => resolve());
    out.cut = () => req.destroy();
    req.end();
  });
  return out;
}

/** The engine body, once the route has one; its first frame is pushed with it. */
async function engineWith(first: string): Promise<EngineBody> {
  await until(() => engine !== null, 'the route opened its engine call', 5_000);
  engine!.push(Buffer.from(first));
  return engine!;
}

describe('relay', () => {
  it('a finished stream is settled for the usage the engine reported, then ends with [DONE]', async () => {
    const client = open();
    const body = await engineWith(content('Hel', 1));
    body.push(Buffer.from(content('lo', 2) + usageOnly(2) + DONE));
    body.finish();
    await client.done;
    expect(client.status).toBe(200);
    expect(settled).toEqual([{ inputTokens: 5, outputTokens: 2, cost: 9_000, endedBefore: false }]);
    expect(client.received.endsWith(DONE)).toBe(true);
    expect(client.received).toContain('"model":"Chat-Model"'); // the canonical id echoed
  });

  it('the last bytes wait for the settlement to be journaled', async () => {
    let deliver: (() => void) | null = null;
    journal = (d) => {
      deliver = d;
    };
    const client = open();
    const body = await engineWith(content('Hi', 1));
    body.push(Buffer.from(usageOnly(1) + DONE));
    body.finish();
    await until(() => deliver !== null, 'the stream was settled', 5_000);
    await new Promise((r) => setTimeout(r, 50));
    expect(client.received).toContain('"Hi"');
    expect(client.received).not.toContain('[DONE]');
    deliver!();
    await client.done;
    expect(client.received.endsWith(DONE)).toBe(true);
  });

  it('usage reaches the client only when it asked (include_usage), with what the call cost', async () => {
    for (const asked of [false, true]) {
      streamOptions = asked ? { include_usage: true } : undefined;
      engine = null;
      const client = open();
      const body = await engineWith(content('Hi', 1));
      body.push(Buffer.from(usageOnly(1) + DONE));
      body.finish();
      await client.done;
      const usageFrames = client.received.split('\n\n').filter((f) => f.includes('"choices":[]'));
      if (asked) {
        expect(usageFrames).toHaveLength(1);
        expect(usageFrames[0]).toContain('"cost":"0.000007"');
        expect(usageFrames[0]).toContain('"currency":"USD"');
      } else {
        expect(usageFrames).toEqual([]);
        // Nor the continuous usage on content frames: the engine's, not the client's.
        expect(client.received).not.toContain('"usage"');
      }
    }
    // Billed the same either way: the engine was always asked for usage.
    expect(settled.map((s) => s.outputTokens)).toEqual([1, 1]);
  });

  it('an engine error frame after the first: status 200 still, an in-band error, no [DONE], billed for what was generated', async () => {
    const client = open();
    const body = await engineWith(content('Hel', 1));
    body.push(
      Buffer.from(`${content('lo', 2)}data: {"error":{"message":"CUDA out of memory","code":500}}\n\n`),
    );
    // vLLM follows its error frame with [DONE]: the stream is still not one the engine finished.
    body.push(Buffer.from(DONE));
    body.finish();
    await client.done;
    expect(client.status).toBe(200);
    const frames = client.received.split('\n\n').filter((f) => f !== '');
    expect(frames.at(-1)).toContain('"error"');
    expect(frames.at(-1)).toContain('server_error');
    expect(frames.at(-1)).not.toContain('CUDA'); // an engine's detail is logged, not sent
    expect(client.received).not.toContain('[DONE]');
    expect(settled).toEqual([
      expect.objectContaining({ inputTokens: 5, outputTokens: 2, endedBefore: false }),
    ]);
  });

  it('an engine cut mid-stream: the in-band error, billed for what was delivered', async () => {
    const client = open();
    const body = await engineWith(content('a', 1));
    body.push(Buffer.from(content('b', 2) + content('c', 3)));
    await until(() => client.received.includes('"c"'), 'the third frame reached the client', 5_000);
    body.fail(new Error('connection reset by the engine'));
    await client.done;
    expect(client.received.split('\n\n').at(-2)).toContain('"error"');
    expect(settled).toEqual([expect.objectContaining({ inputTokens: 5, outputTokens: 3 })]);
  });

  it('a client that leaves mid-stream stops the engine and is billed for what was generated', async () => {
    const client = open();
    const body = await engineWith(content('a', 1));
    body.push(Buffer.from(content('b', 2)));
    await until(() => client.received.includes('"b"'), 'the second frame reached the client', 5_000);
    client.cut();
    await until(() => settled.length === 1, 'the cut stream was settled', 5_000);
    expect(engineAborted).toHaveLength(1);
    expect(settled).toEqual([expect.objectContaining({ inputTokens: 5, outputTokens: 2 })]);
  });
});
