// Relaying an engine's chat stream (CHAT-2..4). Frames pass through as they arrive, handled
// synchronously per engine read (engine/events.ts) and rewritten only to learn usage, echo the
// canonical model and drop usage the client did not ask for (dialects/openai/chunks.ts).
// The response head is written only once the engine's first frame is in hand, so an engine that
// dies before it is retried elsewhere or answered with a real 500; after the first frame a failure
// keeps status 200 and ends with an in-band error frame that the openai SDKs raise. Whatever ends
// the stream — [DONE], an engine failure, the client leaving, the key being rotated — the account is
// billed from the last usage the engine reported.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CatalogueEntry } from '../../core/catalogue/index.ts';
import { ApiError, invalidApiKey } from '../../core/errors.ts';
import { KeyInvalidatedError } from '../auth/key-cache.ts';
import { estimatedUsage, type TextCharge, type TextUsage, usageFromEngine } from '../billing/text-charge.ts';
import type { ProxyContext } from '../context.ts';
import { errorBody } from '../dialects/index.ts';
import { clientChunk, frameView, hasContent, relayFrame } from '../dialects/openai/chunks.ts';
import type { EngineCall, EngineDeps } from '../engine/call.ts';
import type { Cancel } from '../engine/cancel.ts';
import { EngineEvents } from '../engine/events.ts';
import { DONE_FRAME, dataFrame } from '../engine/sse.ts';
import type { ChatCompletionRequest } from '../schemas/openai.ts';
import { ClientClosedError, type RequestAbort } from './abort.ts';

export interface StreamStart {
  call: EngineCall;
  events: EngineEvents;
  first: Record<string, unknown>;
  /** performance.now() when the first frame arrived from the engine. */
  firstAt: number;
  close(): void;
}

/** Opens the engine stream and reads its first frame, failing over to other endpoints until one delivers. */
export async function firstStreamEvent(
  engine: EngineDeps,
  cancel: Cancel,
  open: () => Promise<EngineCall>,
): Promise<StreamStart> {
  for (;;) {
    const call = await open(); // throws once every allowed endpoint was tried
    const events = new EngineEvents(call.body);
    const close = () => {
      call.body.destroy();
      call.release();
    };
    try {
      const ev = await events.next();
      if (ev === null || ev.data === '[DONE]') throw new Error('engine stream ended before its first frame');
      const first = parseChunk(ev.data);
      if (first.error !== undefined) throw new Error(`engine error frame: ${JSON.stringify(first.error)}`);
      return { call, events, first, firstAt: performance.now(), close };
    } catch (err) {
      close();
      if (cancel.aborted) throw cancel.reason ?? err;
      engine.health.recordFailure(call.url);
      engine.metrics.engineErrors.inc({ model: '', kind: 'stream' });
    }
  }
}

function parseChunk(data: string): Record<string, unknown> {
  const v: unknown = JSON.parse(data);
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new Error('engine frame is not an object');
  return v as Record<string, unknown>;
}

export interface RelayArgs {
  start: StreamStart;
  abort: RequestAbort;
  charge: TextCharge;
  entry: CatalogueEntry;
  body: ChatCompletionRequest;
  promptBytes: number;
}

export async function relayStream(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  a: RelayArgs,
): Promise<void> {
  const { start, abort, charge, entry } = a;
  const includeUsage = a.body.stream_options?.include_usage === true;
  const view = frameView(
    {
      model: entry.id,
      includeUsage,
      continuousUsage: includeUsage && a.body.stream_options?.continuous_usage_stats === true,
    },
    entry.servedName ?? entry.id,
  );
  const res = reply.raw;
  reply.hijack();
  res.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string | string[]>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });

  let usage: TextUsage | null = usageFromEngine(start.first.usage);
  let contentFrames = hasContent(start.first) ? 1 : 0;
  // The frames made from one engine read leave in one socket write.
  let pending = '';
  const firstOut = clientChunk(start.first, view);
  if (firstOut !== null) pending = dataFrame(firstOut);
  observeFirstFrame(ctx, request, reply, start);

  const frame = (data: string): void => {
    const fast = relayFrame(data, view);
    if (fast !== undefined) {
      usage = usageFromEngine(fast.usage) ?? usage;
      if (fast.out !== null) pending += dataFrame(fast.out);
      return;
    }
    const chunk = parseChunk(data);
    if (chunk.error !== undefined) throw new Error(`engine error frame: ${JSON.stringify(chunk.error)}`);
    usage = usageFromEngine(chunk.usage) ?? usage;
    if (hasContent(chunk)) contentFrames++;
    const out = clientChunk(chunk, view);
    if (out !== null) pending += dataFrame(out);
  };
  const flush = (): void => {
    if (pending === '' || res.destroyed) return;
    const ok = res.write(pending);
    pending = '';
    if (!ok) {
      start.events.pause();
      res.once('drain', () => start.events.resume());
    }
  };

  // Resolves once: [DONE], the body's end or failure (an abort fails the body too), a bad frame.
  const outcome = await new Promise<{ sawDone: boolean; failure: unknown }>((resolve) => {
    let over = false;
    const finish = (sawDone: boolean, failure: unknown) => {
      if (over) return;
      over = true;
      resolve({ sawDone, failure });
    };
    flush();
    start.events.listen({
      event: (ev) => {
        if (over) return;
        if (ev.data === '[DONE]') return finish(true, null);
        try {
          frame(ev.data);
        } catch (err) {
          finish(false, err);
        }
      },
      batchEnd: () => {
        if (!over) flush();
      },
      end: () => finish(false, new Error('engine stream ended without [DONE]')),
      error: (err) => finish(false, err),
    });
  });
  const { sawDone, failure } = outcome;
  // After [DONE] the engine's body is left to finish on its own, so its connection is reused
  // (destroying an unfinished body closes the socket); the endpoint slot is freed now.
  if (sawDone) {
    start.call.release();
    start.events.resume(); // paused for a slow client: let the engine finish
  } else start.close();
  abort.dispose();

  const reason = abort.cancel.aborted ? abort.cancel.reason : null;
  if (reason instanceof ClientClosedError || res.destroyed) {
    request.log.info('client closed the stream');
  } else if (sawDone) {
    res.end(`${pending}${DONE_FRAME}`);
  } else {
    const err =
      reason instanceof KeyInvalidatedError
        ? invalidApiKey()
        : new ApiError('server_error', 'The engine failed while streaming the response.', { cause: failure });
    if (err.status >= 500) {
      request.log.error({ err: failure }, 'stream failed after its first frame');
      ctx.metrics.engineErrors.inc({ model: entry.id, kind: 'stream' });
    }
    res.end(`${pending}${dataFrame(JSON.stringify(errorBody('openai', err, request.id)))}`);
  }
  await charge.settle(usage ?? estimatedUsage(a.promptBytes, contentFrames));
}

function observeFirstFrame(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  start: StreamStart,
): void {
  const route = request.routeOptions.url ?? '';
  const ttfbMs = reply.elapsedTime;
  const engineTtfbMs = start.firstAt - start.call.sentAt;
  request.observedTtfb = true;
  ctx.metrics.ttfb.observe({ route, model: request.metricModel }, ttfbMs / 1000);
  ctx.metrics.overhead.observe({ route }, Math.max(0, ttfbMs - engineTtfbMs) / 1000);
}
