// Tracing (issue 21 item 6, proxy/tracing/): with OTEL_EXPORTER_OTLP_ENDPOINT set, the official
// OTLP/HTTP exporter sends each API request's trace to a real HTTP receiver on loopback, which
// decodes what arrives (OTLP/JSON, the exporter's encoding). Asserted: the span tree (request →
// auth, model resolution, credit hold, engine call, settlement), the GenAI attributes, the
// traceparent the simulator engine received, the trace id on the request's log lines, and that no
// prompt, completion or key is anywhere in what was exported.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { until } from '../helpers/until.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: OtlpValue }[];
  status?: { code?: number };
}
interface Span {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, string | number | boolean | undefined>;
}

/** An OTLP/HTTP traces receiver: every body as received, and the spans decoded from them. */
async function startReceiver(): Promise<{
  url: string;
  bodies: string[];
  spans: Span[];
  close(): Promise<void>;
}> {
  const bodies: string[] = [];
  const spans: Span[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (req.method === 'POST' && req.url === '/v1/traces') {
        bodies.push(text);
        const body = JSON.parse(text) as {
          resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
        };
        for (const rs of body.resourceSpans)
          for (const ss of rs.scopeSpans)
            for (const s of ss.spans)
              spans.push({
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? '',
                name: s.name,
                attributes: Object.fromEntries(
                  (s.attributes ?? []).map((a) => [
                    a.key,
                    a.value.stringValue ??
                      (a.value.intValue === undefined ? undefined : Number(a.value.intValue)) ??
                      a.value.doubleValue ??
                      a.value.boolValue,
                  ]),
                ),
              });
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    spans,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe('tracing with OpenTelemetry', () => {
  let h: Harness;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const logLines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    receiver = await startReceiver();
    const logStream = new PassThrough();
    let pending = '';
    logStream.on('data', (c: Buffer) => {
      pending += c.toString('utf8');
      let nl = pending.indexOf('\n');
      while (nl >= 0) {
        logLines.push(JSON.parse(pending.slice(0, nl)) as Record<string, unknown>);
        pending = pending.slice(nl + 1);
        nl = pending.indexOf('\n');
      }
    });
    h = await startHarness(
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, PROXY_TRACE_SAMPLE_RATIO: '1' },
      { logStream },
    );
  });
  afterAll(async () => {
    await h?.stop();
    await receiver?.close();
  });

  /** Every span of the trace whose request span carries `requestId`, once its settlement is in. */
  async function traceOf(requestId: string): Promise<Span[]> {
    const root = () => receiver.spans.find((s) => s.attributes['modelplane.request_id'] === requestId);
    await until(
      async () => {
        await h.proxy.tracing!.flush();
        const r = root();
        return (
          r !== undefined && receiver.spans.some((s) => s.traceId === r.traceId && s.name === 'settlement')
        );
      },
      `the trace of ${requestId} at the receiver`,
      30_000,
    );
    return receiver.spans.filter((s) => s.traceId === root()!.traceId);
  }

  function expectTree(spans: Span[], engineSpanName: string) {
    const root = spans.find((s) => s.parentSpanId === '')!;
    expect(root.name).toBe('POST /v1/chat/completions');
    const byName = (name: string) => {
      const found = spans.filter((s) => s.name === name);
      expect(found, name).toHaveLength(1);
      return found[0]!;
    };
    for (const name of ['auth', 'model resolution', 'credit hold', engineSpanName, 'settlement'])
      expect(byName(name).parentSpanId, `${name} is a child of the request's span`).toBe(root.spanId);
    expect(spans).toHaveLength(6);
    return { root, engine: byName(engineSpanName), settlement: byName('settlement') };
  }

  function expectNothingPrivate(...texts: string[]) {
    const exported = receiver.bodies.join('\n');
    expect(exported.length).toBeGreaterThan(0);
    for (const t of [h.secret, h.secret.slice(-12), ...texts]) {
      expect(t.length).toBeGreaterThan(8);
      expect(exported.includes(t), `exported spans contain ${JSON.stringify(t.slice(0, 24))}`).toBe(false);
    }
  }

  for (const stream of [false, true]) {
    it(`one trace per request, its spans and GenAI attributes, the engine's traceparent, no private text (${stream ? 'streamed' : 'whole'})`, async () => {
      const marker = `private-prompt-${randomBytes(8).toString('hex')}`;
      const client = h.client();
      let completion = '';
      let requestId: string;
      if (stream) {
        const { data, response } = await client.chat.completions
          .create({
            model: CHAT_MODEL,
            messages: [{ role: 'user', content: `Say something about ${marker}` }],
            max_tokens: 24,
            stream: true,
          })
          .withResponse();
        requestId = response.headers.get('x-request-id')!;
        for await (const chunk of data) completion += chunk.choices[0]?.delta.content ?? '';
      } else {
        const { data, response } = await client.chat.completions
          .create({
            model: CHAT_MODEL,
            messages: [{ role: 'user', content: `Say something about ${marker}` }],
            max_tokens: 24,
          })
          .withResponse();
        requestId = response.headers.get('x-request-id')!;
        completion = data.choices[0]!.message.content ?? '';
      }
      expect(requestId).toBeTruthy();
      expect(completion.length).toBeGreaterThan(8);

      const spans = await traceOf(requestId);
      const { root, engine, settlement } = expectTree(spans, `chat ${CHAT_MODEL}`);
      expect(root.attributes).toMatchObject({
        'http.request.method': 'POST',
        'http.route': '/v1/chat/completions',
        'http.response.status_code': 200,
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': CHAT_MODEL,
      });
      for (const span of [root, settlement]) {
        expect(span.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
        expect(span.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
        expect(typeof span.attributes['gen_ai.usage.cache_read.input_tokens']).toBe('number');
      }
      expect(engine.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': CHAT_MODEL,
        'http.response.status_code': 200,
      });

      // The engine got the engine span's context (W3C trace context, sampled).
      const received = h.sims
        .flatMap((s) => s.received())
        .filter((r) => r.path === '/v1/chat/completions' && JSON.stringify(r.json).includes(marker));
      expect(received).toHaveLength(1);
      expect(received[0]!.headers.traceparent).toBe(`00-${root.traceId}-${engine.spanId}-01`);

      // The request's log lines carry the trace id: all but fastify's "incoming request", written
      // before any hook runs (it has the request id, which the request's span carries too).
      await until(() => logLines.some((l) => l.reqId === requestId && l.msg === 'request completed'));
      const lines = logLines.filter((l) => l.reqId === requestId && l.msg !== 'incoming request');
      expect(lines.map((l) => l.msg)).toContain('request completed');
      for (const l of lines) expect(l.trace_id, String(l.msg)).toBe(root.traceId);

      expectNothingPrivate(marker, completion.trim().slice(0, 40));
      await h.quiesce();
      await expectLedgerClean(h.redis.client(), [h.accountId]);
    });
  }

  it('a refused call (bad key) is traced with its auth span failed, and the key never exported', async () => {
    const bogus = `sk-bogus-${randomBytes(12).toString('hex')}`;
    const { response } = await h
      .client(bogus)
      .chat.completions.create({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse()
      .catch((err: { status?: number; headers?: Headers }) => ({ response: err }));
    expect((response as { status?: number }).status).toBe(401);
    await until(
      async () => {
        await h.proxy.tracing!.flush();
        return receiver.spans.some((s) => s.name === 'auth' && s.attributes['error.type'] === 'ApiError');
      },
      'the failed auth span at the receiver',
      30_000,
    );
    expectNothingPrivate(bogus);
  });
});

for (const sampled of [null, 0] as const) {
  describe(
    sampled === null ? 'tracing off (no OTLP endpoint)' : 'tracing on, nothing sampled (ratio 0)',
    () => {
      let h: Harness;
      let receiver: Awaited<ReturnType<typeof startReceiver>>;
      beforeAll(async () => {
        receiver = await startReceiver();
        h = await startHarness(
          sampled === null
            ? {}
            : { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, PROXY_TRACE_SAMPLE_RATIO: String(sampled) },
        );
      });
      afterAll(async () => {
        await h?.stop();
        await receiver?.close();
      });

      it('exports nothing and sends the engine no traceparent', async () => {
        expect(h.proxy.tracing === null).toBe(sampled === null);
        const marker = `untraced-${randomBytes(6).toString('hex')}`;
        await h.client().chat.completions.create({
          model: CHAT_MODEL,
          messages: [{ role: 'user', content: marker }],
          max_tokens: 4,
        });
        const received = h.sims
          .flatMap((s) => s.received())
          .filter((r) => JSON.stringify(r.json ?? null).includes(marker));
        expect(received).toHaveLength(1);
        expect(received[0]!.headers.traceparent).toBeUndefined();
        await h.proxy.tracing?.flush();
        expect(receiver.bodies).toEqual([]);
        await h.quiesce();
        await expectLedgerClean(h.redis.client(), [h.accountId]);
      });
    },
  );
}
