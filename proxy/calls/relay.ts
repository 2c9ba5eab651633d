// The one relay of every streamed text call, whatever its dialect (STYLE "One relay, many
// translators"). It owns reading the engine's SSE, the usage, the settlement, stalls, in-band
// errors and the last write; the dialect's translator (../dialects/translator.ts) only turns
// engine frames into the client's bytes.
//
// Frames are handled synchronously per engine read (engine/events.ts); the usual frame is cut from
// the engine's bytes by the translator, anything else parsed. The response head is written once
// the engine's first frame is in hand (or earlier, by ./early-head.ts, for a dialect that pings a
// silent engine), so an engine that dies before it is retried elsewhere or answered with a real
// status; after the head a failure keeps status 200 and ends with the translator's in-band error,
// which the SDKs raise. Whatever ends the stream — its end, an engine failure, the client leaving
// or stalling, the key being rotated, shutdown — the account is billed from the last usage the
// engine reported (the proxy's count where it reported none), settled before the last bytes leave.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CatalogueEntry, TokenPrice } from '../../core/catalogue/index.ts';
import { ApiError, invalidApiKey } from '../../core/errors.ts';
import { ClientClosedError, ClientStalledError } from '../../http/client-closed.ts';
import { KeyInvalidatedError } from '../auth/key-cache.ts';
import { callCost } from '../billing/call-cost.ts';
import type { Charge } from '../billing/charge.ts';
import { textBill } from '../billing/text-quote.ts';
import type { ProxyContext } from '../context.ts';
import type { StreamTranslator } from '../dialects/translator.ts';
import type { EngineEvents } from '../engine/events.ts';
import { StreamUsage } from '../engine/frames/index.ts';
import { DataBlockEvent, isDone, type SseEvent } from '../engine/sse.ts';
import type { RequestAbort } from '../request-abort.ts';
import type { TextUsage } from '../usage.ts';
import type { EarlyHead } from './early-head.ts';
import { parseChunk, type StreamStart } from './engine-stream.ts';
import { openEventStream } from './event-stream.ts';
import { LastFrames } from './finish-reason.ts';

export interface RelayArgs {
  start: StreamStart;
  abort: RequestAbort;
  charge: Charge;
  entry: CatalogueEntry;
  price: TokenPrice;
  /** Bytes the hold counted for the prompt (the estimate's input when the engine reports no usage). */
  promptBytes: number;
  translator: StreamTranslator;
  /** The watch over the wait for the first frame, for a dialect that pings (its head may be out). */
  early: EarlyHead | undefined;
}

export async function relay(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  a: RelayArgs,
): Promise<void> {
  const { start, abort, charge, entry, translator: tr } = a;
  const early = a.early?.res ?? null;
  const res = early ?? openEventStream(reply);
  const out = relayWrites(ctx, res, start, abort);
  const pending = out.pending;

  const usage = new StreamUsage(start.first);
  // Its finish reason is read once, at its end, from the last frames (./finish-reason.ts).
  const last = new LastFrames();
  const frame = (ev: SseEvent, parsed?: Record<string, unknown>): void => {
    const fast = ev instanceof DataBlockEvent ? tr.fast(ev.block, pending) : undefined;
    if (fast !== undefined) {
      last.add((ev as DataBlockEvent).block);
      usage.read((ev as DataBlockEvent).block, fast);
      return;
    }
    last.add(ev.data);
    const chunk = parsed ?? parseChunk(ev.data);
    if (chunk.error !== undefined) throw new Error(`engine error frame: ${JSON.stringify(chunk.error)}`);
    usage.parsed(chunk);
    tr.chunk(chunk, pending);
  };
  if (early === null) {
    const head = tr.head(usage.head);
    if (head !== '') pending.push(Buffer.from(head));
  }
  // The first frame was parsed (to tell an error frame before committing to this engine); it is
  // still relayed from its bytes when it has the usual shape, like every other frame.
  frame(start.firstEvent, start.first);
  observeFirstFrame(ctx, request, reply, start);
  // Time to first token: the first frame with a generated token, which an engine's empty role frame
  // (sent before its prefill ends) is not; null for a stream that generated nothing.
  const firstToken = (): void => {
    if (request.callTtftMs === null && usage.generating) request.callTtftMs = Math.round(reply.elapsedTime);
  };
  firstToken();

  // The stream's charge so far, as its end would bill it: Billing journals it every
  // PROXY_STREAM_PROGRESS_MS, so a crash of this replica loses at most one interval (docs/money.md
  // "What a crash can strand"); billed as a cut stream would be if this replica died now.
  charge.trackProgress(() => streamBill(request, a, usage.sofar(a.promptBytes)));
  const idle = a.early?.handOver(() => {
    pending.push(Buffer.from(tr.ping ?? ''));
    out.flush();
  });
  let ended: { sawDone: boolean; failure: unknown };
  try {
    ended = await pumpEvents(start, out, (ev) => {
      if (idle !== undefined) idle.quiet = false;
      frame(ev);
      firstToken();
    });
  } finally {
    idle?.stop();
    out.done();
  }
  abort.dispose();
  request.callFinish = last.finishReason();

  // Charged for what was generated; the last bytes leave once the settlement is in the journal,
  // and a dialect that reports usage at the end reports exactly the usage billed.
  const bill = streamBill(request, a, usage.ended(a.promptBytes));
  charge.settle(bill.cost, bill.usage, () => {
    const how = streamFailure(ctx, request, res, {
      abort,
      sawDone: ended.sawDone,
      failure: ended.failure,
      entry,
    });
    if (how === 'gone') return;
    const cost = callCost(request, bill.cost);
    const last =
      how === 'done' ? tr.end(bill.usage, cost) : tr.error(how, request.id, { usage: bill.usage, cost });
    res.end(pending.length === 0 ? last : Buffer.concat([...pending, last]));
  });
}

/** The bill of a stream's usage (../engine/frames/stream-usage.ts: the engine's last reported, else the proxy's count). */
function streamBill(
  request: FastifyRequest,
  a: { price: TokenPrice; entry: CatalogueEntry; charge: Charge },
  reported: TextUsage,
): { cost: number; usage: TextUsage } {
  const bill = textBill(a.price, reported, { output: a.charge.allowance, input: a.entry.contextLength });
  if (bill.implausible) request.log.warn({ usage: reported }, 'the engine reported implausible usage');
  return bill;
}

/**
 * What a relay has made and not yet written: the frames of one engine read leave in one socket
 * write, and a client that stops reading pauses the engine (backpressure end to end).
 */
class PendingWrites {
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
function relayWrites(
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
async function pumpEvents(
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

interface StreamEnd {
  abort: RequestAbort;
  sawDone: boolean;
  failure: unknown;
  entry: CatalogueEntry;
}

/**
 * How a relayed stream ends: 'gone' (the client left: nothing to write), 'done' (the engine
 * finished), or the error its client is told in-band (logged and counted when the engine failed).
 */
function streamFailure(
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
