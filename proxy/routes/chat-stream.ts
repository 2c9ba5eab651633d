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
import type { CallCharge } from '../billing/charge.ts';
import { estimatedUsage, type TextUsage, textBill, usageFromEngine } from '../billing/text-quote.ts';
import type { ProxyContext } from '../context.ts';
import { errorBody } from '../dialects/index.ts';
import { clientChunk, frameView, hasContent, relayFrame, usageIn } from '../dialects/openai/chunks.ts';
import type { EngineCall, EngineDeps } from '../engine/call.ts';
import type { Cancel } from '../engine/cancel.ts';
import { EngineEvents } from '../engine/events.ts';
import { DataBlockEvent, DONE_FRAME, dataFrame, isDone, type SseEvent } from '../engine/sse.ts';
import { ClientClosedError, type RequestAbort } from '../request-abort.ts';
import type { ChatCompletionRequest } from '../schemas/openai.ts';

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

function parseChunk(data: string): Record<string, unknown> {
  const v: unknown = JSON.parse(data);
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new Error('engine frame is not an object');
  return v as Record<string, unknown>;
}

export interface RelayArgs {
  start: StreamStart;
  abort: RequestAbort;
  charge: CallCharge;
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
  // The last fast-path frame's usage, left as bytes: only the stream's last one is ever parsed.
  let usageBlock: Buffer | null = null;
  let usageAt = 0;
  // The frames made from one engine read leave in one socket write.
  let pending: Buffer[] = [];
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
  const flush = (): void => {
    if (pending.length === 0 || res.destroyed) return;
    const ok = res.write(pending.length === 1 ? pending[0]! : Buffer.concat(pending));
    pending = [];
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
        if (isDone(ev)) return finish(true, null);
        try {
          frame(ev);
        } catch (err) {
          finish(false, err);
        }
      },
      batchEnd: () => {
        if (!over) flush();
      },
      // The usual end comes after [DONE]: no Error (and its stack trace) is built for it.
      end: () => {
        if (!over) finish(false, new Error('engine stream ended without [DONE]'));
      },
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

  if (usageBlock !== null) usage = usageFromEngine(usageIn(usageBlock, usageAt)) ?? usage;
  // Charged for what was generated; the last bytes leave once the settlement is in the journal.
  const reported = usage ?? estimatedUsage(a.promptBytes, contentFrames);
  const bill = textBill(a.price, reported, { output: charge.allowance, input: entry.contextLength });
  if (bill.implausible) request.log.warn({ usage: reported }, 'the engine reported implausible usage');
  charge.settle(bill.cost, bill.usage, () =>
    endStream(ctx, request, res, { abort, sawDone, failure, pending, entry }),
  );
}

/** The stream's last bytes: [DONE], or an in-band error frame (nothing when the client left). */
function endStream(
  ctx: ProxyContext,
  request: FastifyRequest,
  res: FastifyReply['raw'],
  e: { abort: RequestAbort; sawDone: boolean; failure: unknown; pending: Buffer[]; entry: CatalogueEntry },
): void {
  const reason = e.abort.cancel.aborted ? e.abort.cancel.reason : null;
  if (reason instanceof ClientClosedError || res.destroyed) {
    request.log.info('client closed the stream');
  } else if (e.sawDone) {
    res.end(Buffer.concat([...e.pending, DONE_FRAME]));
  } else {
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
    const errorFrame = dataFrame(JSON.stringify(errorBody('openai', err, request.id)));
    res.end(Buffer.concat([...e.pending, Buffer.from(errorFrame)]));
  }
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
