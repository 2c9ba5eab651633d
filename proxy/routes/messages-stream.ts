// Relaying an engine's chat stream as Messages events (MSG-2, MSG-7): the same pump, backpressure
// and settlement as the chat relay (./chat-stream.ts), with each engine chunk translated by
// dialects/messages/stream.ts.
//
// The head waits for the engine's first frame, so an engine that dies before it fails over or
// gets a real, retryable 5xx (nothing charged) — unless the engine stays silent: once the hold
// covers the call and a whole PROXY_MESSAGES_PING_MS has passed with no first frame (one to two
// intervals: a queue, a long prefill), the head, `message_start` (input tokens estimated, as the
// final `message_delta` carries the true counts) and a `ping` go out, and pings follow while the
// engine is silent, so clients and the proxies between see a live stream. From the head on, a
// failure is an `event: error`, which the Anthropic SDKs raise. A fast engine's stream is written
// exactly as before: head, message_start and the first content in one write.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CatalogueEntry, TokenPrice } from '../../core/catalogue/index.ts';
import type { CallCharge } from '../billing/charge.ts';
import { type TextUsage, usageFromEngine } from '../billing/text-quote.ts';
import type { ProxyContext } from '../context.ts';
import { messagesErrorBody } from '../dialects/messages/error-body.ts';
import { type ChatChunk, MessagesStream, PING_EVENT } from '../dialects/messages/stream.ts';
import { textFrame } from '../dialects/messages/text-frame.ts';
import { hasContent, usageIn } from '../dialects/openai/chunks.ts';
import { DataBlockEvent, type SseEvent } from '../engine/sse.ts';
import { logFailure, toApiError } from '../plugins/errors.ts';
import {
  observeFirstFrame,
  openEventStream,
  parseChunk,
  pumpEvents,
  relayWrites,
  type StreamEnd,
  streamFailure,
} from './chat-stream.ts';
import { type FirstFrameWait, type StreamRelay, streamBill } from './text-call.ts';

export interface MessagesRelayArgs extends StreamRelay {
  entry: CatalogueEntry;
  price: TokenPrice;
  promptBytes: number;
  /** The watch over the wait for the first frame, and the stream's events (./messages.ts makes it). */
  head: MessagesStreamHead;
}

/**
 * A Messages stream before the engine's first frame: registered with the pinger as the hold is
 * sought; after a whole silent interval with the hold covering the call, it writes the head,
 * message_start and a ping, then a ping per silent interval. The relay takes the same watch over.
 */
export class MessagesStreamHead implements FirstFrameWait {
  /** The response, once its head is out. */
  res: FastifyReply['raw'] | null = null;
  private readonly watched: Watched & { stop(): void };

  constructor(
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
    readonly messages: MessagesStream,
    private readonly o: {
      charge: CallCharge;
      /** The prompt's tokens as the proxy estimates them, for an early message_start. */
      estimateInput: () => number;
      pingMs: number;
    },
  ) {
    // Not quiet yet: the first tick only starts the interval, so a head goes out after a whole one.
    this.watched = pinger(o.pingMs).watch(() => this.silent(), false);
  }

  private silent(): void {
    if (this.res !== null) {
      if (!this.res.destroyed) this.res.write(PING_EVENT);
      return;
    }
    // Not before the hold covers the call (a 429 must still be a status), nor to a client gone.
    if (!this.o.charge.covered || this.reply.raw.destroyed) return;
    this.res = openEventStream(this.reply);
    const usage = { inputTokens: this.o.estimateInput(), cachedTokens: 0, outputTokens: 0 };
    this.res.write(this.messages.start(usage) + PING_EVENT);
  }

  /** The first frame is in: the relay's pings go through `ping` from now on. */
  handOver(ping: () => void): Watched & { stop(): void } {
    this.watched.ping = ping;
    this.watched.quiet = false;
    return this.watched;
  }

  failed(thrown: unknown): boolean {
    this.watched.stop();
    const res = this.reply.raw;
    if (!res.headersSent) return false;
    if (!res.writableEnded && !res.destroyed) {
      const err = toApiError(thrown);
      logFailure(this.request, thrown, err);
      res.end(MessagesStream.error(messagesErrorBody(err, this.request.id)));
    }
    return true;
  }
}

export async function relayMessages(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  a: MessagesRelayArgs,
): Promise<void> {
  const { start, abort, charge, entry, head } = a;
  const { messages } = head;
  const early = head.res;
  const res = early ?? openEventStream(reply);
  const out = relayWrites(ctx, res, start, abort);
  let usage: TextUsage | null = usageFromEngine(start.first.usage);
  // The last fast-path frame's usage, left as bytes: only the stream's last one is ever parsed.
  let usageBlock: Buffer | null = null;
  let usageAt = 0;
  let contentFrames = 0;
  const take = (chunk: Record<string, unknown>): void => {
    if (chunk.error !== undefined) throw new Error(`engine error frame: ${JSON.stringify(chunk.error)}`);
    const u = usageFromEngine(chunk.usage);
    if (u !== null) {
      usage = u;
      usageBlock = null;
    }
    if (hasContent(chunk)) contentFrames++;
    const events = messages.chunk(chunk as ChatChunk);
    if (events !== '') out.pending.push(Buffer.from(events));
  };
  if (early === null) out.pending.push(Buffer.from(messages.start(usage)));
  take(start.first);
  observeFirstFrame(ctx, request, reply, start);

  const ping = () => {
    out.pending.push(Buffer.from(PING_EVENT));
    out.flush();
  };
  const idle = head.handOver(ping);
  const frame = (ev: SseEvent): void => {
    idle.quiet = false;
    const fast = ev instanceof DataBlockEvent ? textFrame(ev.block) : undefined;
    if (fast === undefined) {
      take(parseChunk(ev.data));
      return;
    }
    if (fast.usageAt !== -1) {
      usageBlock = (ev as DataBlockEvent).block;
      usageAt = fast.usageAt;
    }
    const pieces = messages.textDelta(fast.text);
    if (pieces.length > 0) {
      contentFrames++;
      for (const p of pieces) out.pending.push(p);
    }
  };
  // Issue 22: the stream's charge so far, as its end would bill it (journaled at an interval).
  charge.trackProgress(() => {
    const so = usageBlock === null ? null : usageFromEngine(usageIn(usageBlock, usageAt));
    return streamBill(request, { ...a, charge }, so ?? usage, contentFrames);
  });
  let ended: { sawDone: boolean; failure: unknown };
  try {
    ended = await pumpEvents(start, out, frame);
  } finally {
    idle.stop();
    out.done();
  }
  abort.dispose();

  if (usageBlock !== null) usage = usageFromEngine(usageIn(usageBlock, usageAt)) ?? usage;
  // Charged for what was generated; the last events leave once the settlement is in the journal,
  // and message_delta reports exactly the usage billed.
  const bill = streamBill(request, { ...a, charge }, usage, contentFrames);
  const end: StreamEnd = { abort, sawDone: ended.sawDone, failure: ended.failure, entry };
  charge.settle(bill.cost, bill.usage, () => {
    const how = streamFailure(ctx, request, res, end);
    if (how === 'gone') return;
    const last =
      how === 'done' ? messages.end(bill.usage) : MessagesStream.error(messagesErrorBody(how, request.id));
    res.end(Buffer.concat([...out.pending, Buffer.from(last)]));
  });
}

interface Watched {
  /** Cleared by each engine frame; a tick that finds it still set pings. */
  quiet: boolean;
  ping(): void;
}

/**
 * One timer for every Messages stream of a process (per interval), instead of one per stream:
 * each tick pings the streams that stayed silent since the last tick, so a silent stream gets a
 * ping within one to two intervals.
 */
class Pinger {
  private readonly streams = new Set<Watched>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly intervalMs: number) {}

  /** `quiet`: whether the stream counts as silent from now (false: a frame just came). */
  watch(ping: () => void, quiet: boolean): Watched & { stop(): void } {
    const w = { quiet, ping, stop: () => this.unwatch(w) };
    this.streams.add(w);
    if (this.timer === null) {
      this.timer = setInterval(() => this.tick(), this.intervalMs);
      this.timer.unref();
    }
    return w;
  }

  private unwatch(w: Watched): void {
    this.streams.delete(w);
    if (this.streams.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private tick(): void {
    for (const w of this.streams) {
      if (w.quiet) w.ping();
      w.quiet = true;
    }
  }
}

const pingers = new Map<number, Pinger>();
function pinger(intervalMs: number): Pinger {
  let p = pingers.get(intervalMs);
  if (p === undefined) {
    p = new Pinger(intervalMs);
    pingers.set(intervalMs, p);
  }
  return p;
}
