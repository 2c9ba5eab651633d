// Relaying an engine's chat stream (CHAT-2..4). Frames pass through as they arrive, handled
// synchronously per engine read (engine/events.ts) and rewritten only to learn usage, echo the
// canonical model and drop usage the client did not ask for (dialects/openai/chunks.ts).
// Frames in the usual shape are cut from the engine's bytes and written as bytes.
// The response head is written only once the engine's first frame is in hand, so an engine that
// dies before it is retried elsewhere or answered with a real 500; after the first frame a failure
// keeps status 200 and ends with an in-band error frame that the openai SDKs raise. Whatever ends
// the stream — [DONE], an engine failure, the client leaving, the key being rotated, shutdown — the
// account is billed from the last usage the engine reported, settled before the last bytes leave.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CatalogueEntry, TokenPrice } from '../../core/catalogue/index.ts';
import { ApiError, invalidApiKey } from '../../core/errors.ts';
import { KeyInvalidatedError } from '../auth/key-cache.ts';
import { type TextUsage, usageFromEngine } from '../billing/text-quote.ts';
import type { ProxyContext } from '../context.ts';
import { errorBody } from '../dialects/index.ts';
import { clientChunk, frameView, hasContent, relayFrame, usageIn } from '../dialects/openai/chunks.ts';
import type { EngineCall, EngineDeps } from '../engine/call.ts';
import type { Cancel } from '../engine/cancel.ts';
import { EngineEvents } from '../engine/events.ts';
import { DataBlockEvent, DONE_FRAME, dataFrame, isDone, type SseEvent } from '../engine/sse.ts';
import { ClientClosedError, ClientStalledError, type RequestAbort } from '../request-abort.ts';
import type { ChatCompletionRequest } from '../schemas/openai.ts';
import { type StreamRelay, streamBill } from './text-call.ts';

export interface StreamStart {
  call: EngineCall;
  events: EngineEvents;
  first: Record<string, unknown>;
  /** The first frame as it came (its bytes are relayed as they are when in the usual shape). */
  firstEvent: SseEvent;
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
      if (ev === null || isDone(ev)) throw new Error('engine stream ended before its first frame');
      const first = parseChunk(ev.data);
      if (first.error !== undefined) throw new Error(`engine error frame: ${JSON.stringify(first.error)}`);
      return { call, events, first, firstEvent: ev, firstAt: performance.now(), close };
    } catch (err) {
      close();
      if (cancel.aborted) throw cancel.reason ?? err;
      engine.health.recordFailure(call.url);
      engine.metrics.engineErrors.inc({ model: '', kind: 'stream' });
    }
  }
}

export function parseChunk(data: string): Record<string, unknown> {
  const v: unknown = JSON.parse(data);
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new Error('engine frame is not an object');
  return v as Record<string, unknown>;
}

export interface RelayArgs extends StreamRelay {
  entry: CatalogueEntry;
  price: TokenPrice;
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
  const res = openEventStream(reply);

  let usage: TextUsage | null = usageFromEngine(start.first.usage);
  let contentFrames = hasContent(start.first) ? 1 : 0;
  // The last fast-path frame's usage, left as bytes: only the stream's last one is ever parsed.
  let usageBlock: Buffer | null = null;
  let usageAt = 0;
  const out = relayWrites(ctx, res, start, abort);
  const pending = out.pending;
  // The first frame was parsed (to tell an error frame before committing to this engine); it is
  // still relayed from its bytes when it has the usual shape, like every other frame.
  const firstEv = start.firstEvent;
  const firstFast = firstEv instanceof DataBlockEvent ? relayFrame(firstEv.block, view) : undefined;
  if (firstFast !== undefined) {
    if (firstFast.pieces !== null) for (const p of firstFast.pieces) pending.push(p);
  } else {
    const firstOut = clientChunk(start.first, view);
    if (firstOut !== null) pending.push(Buffer.from(dataFrame(firstOut)));
  }
  observeFirstFrame(ctx, request, reply, start);

  const frame = (ev: SseEvent): void => {
    const fast = ev instanceof DataBlockEvent ? relayFrame(ev.block, view) : undefined;
    if (fast !== undefined) {
      usageBlock = (ev as DataBlockEvent).block;
      usageAt = fast.usageAt;
      if (fast.pieces !== null) for (const p of fast.pieces) pending.push(p);
      return;
    }
    const chunk = parseChunk(ev.data);
    if (chunk.error !== undefined) throw new Error(`engine error frame: ${JSON.stringify(chunk.error)}`);
    const parsed = usageFromEngine(chunk.usage);
    if (parsed !== null) {
      usage = parsed;
      usageBlock = null;
    }
    if (hasContent(chunk)) contentFrames++;
    const out = clientChunk(chunk, view);
    if (out !== null) pending.push(Buffer.from(dataFrame(out)));
  };
  // Issue 22: the stream's charge so far, as its end would bill it (journaled at an interval).
  charge.trackProgress(() => {
    const so = usageBlock === null ? null : usageFromEngine(usageIn(usageBlock, usageAt));
    return streamBill(request, { ...a, charge }, so ?? usage, contentFrames);
  });
  const { sawDone, failure } = await pumpEvents(start, out, frame);
  out.done();
  abort.dispose();

  if (usageBlock !== null) usage = usageFromEngine(usageIn(usageBlock, usageAt)) ?? usage;
  // Charged for what was generated; the last bytes leave once the settlement is in the journal.
  const bill = streamBill(request, { ...a, charge }, usage, contentFrames);
  charge.settle(bill.cost, bill.usage, () =>
    endStream(ctx, request, res, { abort, sawDone, failure, pending, entry }),
  );
}

/** Takes the response over from fastify and writes a 200 event-stream head (its headers kept). */
export function openEventStream(reply: FastifyReply): FastifyReply['raw'] {
  const res = reply.raw;
  reply.hijack();
  res.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string | string[]>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  return res;
}

/**
 * What a relay has made and not yet written: the frames of one engine read leave in one socket
 * write, and a client that stops reading pauses the engine (backpressure end to end).
 */
export class PendingWrites {
  readonly pending: Buffer[] = [];
  private stall: NodeJS.Timeout | null = null;

  /**
   * `stallMs`: how long a client may leave the socket full (not reading) before `onStall` ends
   * the call; until then the engine stays paused, so a stalled reader pins only what is already
   * in the socket's buffer.
   */
  constructor(
    private readonly res: FastifyReply['raw'],
    private readonly events: EngineEvents,
    private readonly stallMs: number,
    private readonly onStall: () => void,
  ) {}

  flush(): void {
    const { pending, res } = this;
    if (pending.length === 0 || res.destroyed) return;
    const ok = res.write(pending.length === 1 ? pending[0]! : Buffer.concat(pending));
    pending.length = 0;
    if (!ok && this.stall === null) {
      this.events.pause();
      this.stall = setTimeout(() => {
        this.stall = null;
        this.onStall();
      }, this.stallMs);
      res.once('drain', () => {
        if (this.stall !== null) clearTimeout(this.stall);
        this.stall = null;
        this.events.resume();
      });
    }
  }

  /** The stream is over: no stall to watch for any more. */
  done(): void {
    if (this.stall !== null) clearTimeout(this.stall);
    this.stall = null;
  }
}

/** The writes of a relay for `request`, ending the call when its client stops reading. */
export function relayWrites(
  ctx: ProxyContext,
  res: FastifyReply['raw'],
  start: StreamStart,
  abort: RequestAbort,
): PendingWrites {
  return new PendingWrites(res, start.events, ctx.config.PROXY_STREAM_STALL_MS, () => {
    abort.cancel.abort(new ClientStalledError());
    res.destroy();
  });
}

/**
 * Feeds a started engine stream's events to `frame` (which may throw: a bad frame ends the
 * stream) and flushes what it made after each engine read. Resolves once: [DONE], the body's end
 * or failure (an abort fails the body too), a bad frame. After [DONE] the engine's body is left
 * to finish on its own, so its connection is reused (destroying an unfinished body closes the
 * socket); the endpoint slot is freed at once.
 */
export async function pumpEvents(
  start: StreamStart,
  out: PendingWrites,
  frame: (ev: SseEvent) => void,
): Promise<{ sawDone: boolean; failure: unknown }> {
  const outcome = await new Promise<{ sawDone: boolean; failure: unknown }>((resolve) => {
    let over = false;
    const finish = (sawDone: boolean, failure: unknown) => {
      if (over) return;
      over = true;
      resolve({ sawDone, failure });
    };
    out.flush();
    start.events.listen({
      event: (ev) => {
        if (over) return;
        if (isDone(ev)) return finish(true, null);
        try {
          frame(ev);
        } catch (err) {
          finish(false, err);
        }
      },
      batchEnd: () => {
        if (!over) out.flush();
      },
      // The usual end comes after [DONE]: no Error (and its stack trace) is built for it.
      end: () => {
        if (!over) finish(false, new Error('engine stream ended without [DONE]'));
      },
      error: (err) => finish(false, err),
    });
  });
  if (outcome.sawDone) {
    start.call.release();
    start.events.resume(); // paused for a slow client: let the engine finish
  } else start.close();
  return outcome;
}

/** The stream's last bytes: [DONE], or an in-band error frame (nothing when the client left). */
function endStream(
  ctx: ProxyContext,
  request: FastifyRequest,
  res: FastifyReply['raw'],
  e: StreamEnd & { pending: Buffer[] },
): void {
  const err = streamFailure(ctx, request, res, e);
  if (err === 'gone') return;
  if (err === 'done') {
    res.end(Buffer.concat([...e.pending, DONE_FRAME]));
    return;
  }
  const errorFrame = dataFrame(JSON.stringify(errorBody('openai', err, request.id)));
  res.end(Buffer.concat([...e.pending, Buffer.from(errorFrame)]));
}

export interface StreamEnd {
  abort: RequestAbort;
  sawDone: boolean;
  failure: unknown;
  entry: CatalogueEntry;
}

/**
 * How a relayed stream ends: 'gone' (the client left: nothing to write), 'done' (the engine
 * finished), or the error its client is told in-band (logged and counted when the engine failed).
 */
export function streamFailure(
  ctx: ProxyContext,
  request: FastifyRequest,
  res: FastifyReply['raw'],
  e: StreamEnd,
): ApiError | 'gone' | 'done' {
  const reason = e.abort.cancel.aborted ? e.abort.cancel.reason : null;
  if (reason instanceof ClientClosedError || res.destroyed) {
    if (reason instanceof ClientStalledError) {
      request.log.warn('the client stopped reading the stream; ended it');
      ctx.metrics.streamsStalled.inc();
    } else request.log.info('client closed the stream');
    return 'gone';
  }
  if (e.sawDone) return 'done';
  const err =
    reason instanceof KeyInvalidatedError
      ? invalidApiKey()
      : reason instanceof ApiError
        ? reason // the proxy ended the stream (shutdown)
        : new ApiError('server_error', 'The engine failed while streaming the response.', {
            cause: e.failure,
          });
  if (err.status >= 500 && reason === null) {
    request.log.error({ err: e.failure }, 'stream failed after its first frame');
    ctx.metrics.engineErrors.inc({ model: e.entry.id, kind: 'stream' });
  }
  return err;
}

export function observeFirstFrame(
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
