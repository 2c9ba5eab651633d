// Relaying an engine's chat stream (CHAT-2..4). Frames pass through as they arrive (each one is
// parsed only to learn usage, echo the canonical model and drop usage the client did not ask for).
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
import { clientChunk, hasContent } from '../dialects/openai/chunks.ts';
import type { EngineCall, EngineDeps } from '../engine/call.ts';
import { DONE_FRAME, dataFrame, type SseEvent, sseEvents } from '../engine/sse.ts';
import type { ChatCompletionRequest } from '../schemas/openai.ts';
import { ClientClosedError, type RequestAbort } from './abort.ts';

export interface StreamStart {
  call: EngineCall;
  events: AsyncIterator<SseEvent>;
  first: Record<string, unknown>;
  /** performance.now() when the first frame arrived from the engine. */
  firstAt: number;
  close(): void;
}

/** Opens the engine stream and reads its first frame, failing over to other endpoints until one delivers. */
export async function firstStreamEvent(
  engine: EngineDeps,
  signal: AbortSignal,
  open: () => Promise<EngineCall>,
): Promise<StreamStart> {
  for (;;) {
    const call = await open(); // throws once every allowed endpoint was tried
    const events = sseEvents(call.body)[Symbol.asyncIterator]();
    const close = () => {
      call.body.destroy();
      call.release();
    };
    try {
      const r = await events.next();
      if (r.done || r.value.data === '[DONE]') throw new Error('engine stream ended before its first frame');
      const first = parseChunk(r.value.data);
      if (first.error !== undefined) throw new Error(`engine error frame: ${JSON.stringify(first.error)}`);
      return { call, events, first, firstAt: performance.now(), close };
    } catch (err) {
      close();
      if (signal.aborted) throw signal.reason ?? err;
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
  const view = {
    model: entry.id,
    includeUsage,
    continuousUsage: includeUsage && a.body.stream_options?.continuous_usage_stats === true,
  };
  const res = reply.raw;
  reply.hijack();
  res.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string | string[]>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });

  // Frames that arrive in one engine read leave in one socket write: corked until the tick ends.
  let corked = false;
  const uncork = () => {
    corked = false;
    res.uncork();
  };
  const write = (frame: string): boolean => {
    if (!corked) {
      corked = true;
      res.cork();
      process.nextTick(uncork);
    }
    return res.write(frame);
  };

  let usage: TextUsage | null = usageFromEngine(start.first.usage);
  let contentFrames = hasContent(start.first) ? 1 : 0;
  const firstOut = clientChunk(start.first, view);
  if (firstOut !== null) write(dataFrame(firstOut));
  observeFirstFrame(ctx, request, reply, start);

  let sawDone = false;
  let failure: unknown = null;
  try {
    for (;;) {
      const r = await start.events.next();
      if (r.done) throw new Error('engine stream ended without [DONE]');
      if (r.value.data === '[DONE]') {
        sawDone = true;
        break;
      }
      const chunk = parseChunk(r.value.data);
      if (chunk.error !== undefined) throw new Error(`engine error frame: ${JSON.stringify(chunk.error)}`);
      usage = usageFromEngine(chunk.usage) ?? usage;
      if (hasContent(chunk)) contentFrames++;
      const out = clientChunk(chunk, view);
      if (out !== null && !write(dataFrame(out))) await drained(res);
    }
  } catch (err) {
    failure = err;
  } finally {
    if (sawDone) drainAfterDone(start);
    else start.close();
    abort.dispose();
  }

  const reason = abort.signal.aborted ? abort.signal.reason : null;
  if (reason instanceof ClientClosedError || res.destroyed) {
    request.log.info('client closed the stream');
  } else if (sawDone) {
    res.end(DONE_FRAME);
  } else {
    const err =
      reason instanceof KeyInvalidatedError
        ? invalidApiKey()
        : new ApiError('server_error', 'The engine failed while streaming the response.', { cause: failure });
    if (err.status >= 500) {
      request.log.error({ err: failure }, 'stream failed after its first frame');
      ctx.metrics.engineErrors.inc({ model: entry.id, kind: 'stream' });
    }
    res.end(dataFrame(JSON.stringify(errorBody('openai', err, request.id))));
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

/**
 * After [DONE] the engine's response is complete, but its end may not have been read yet. Reading
 * it (rather than destroying the body) keeps the engine connection alive for the next request:
 * destroying an unfinished undici body aborts the request, closes the socket and builds an error
 * with a stack trace — a tenth of the proxy's CPU on short streams. The endpoint slot is freed now.
 */
function drainAfterDone(start: StreamStart): void {
  start.call.release();
  start.events.next().then(
    (r) => {
      if (!r.done) start.close(); // more after [DONE]: not worth reading
    },
    () => start.close(),
  );
}

/** Resolves when the socket can take more, or is gone (then the engine body read fails next). */
function drained(res: NodeJS.WritableStream & { once: NodeJS.EventEmitter['once'] }): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.removeListener('drain', done);
      res.removeListener('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}
