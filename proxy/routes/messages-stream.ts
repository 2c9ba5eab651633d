// Relaying an engine's chat stream as Messages events (MSG-2, MSG-7): the same pump, backpressure
// and settlement as the chat relay (./chat-stream.ts), with each engine chunk translated by
// dialects/messages/stream.ts. The head is written once the engine's first frame is in hand (so
// an engine that dies before it fails over or gets a real 500); from then on a failure is an
// `event: error`, which the Anthropic SDKs raise, and a `ping` goes out whenever the engine has
// been silent for one to two PROXY_MESSAGES_PING_MS (a long prefill, thinking).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CatalogueEntry, TokenPrice } from '../../core/catalogue/index.ts';
import { type TextUsage, usageFromEngine } from '../billing/text-quote.ts';
import type { ProxyContext } from '../context.ts';
import { messagesErrorBody } from '../dialects/messages/error-body.ts';
import { type ChatChunk, MessagesStream, PING_EVENT } from '../dialects/messages/stream.ts';
import { textFrame } from '../dialects/messages/text-frame.ts';
import { hasContent, usageIn } from '../dialects/openai/chunks.ts';
import { DataBlockEvent, type SseEvent } from '../engine/sse.ts';
import {
  observeFirstFrame,
  openEventStream,
  parseChunk,
  pumpEvents,
  relayWrites,
  type StreamEnd,
  streamFailure,
} from './chat-stream.ts';
import { type StreamRelay, streamBill } from './text-call.ts';

export interface MessagesRelayArgs extends StreamRelay {
  entry: CatalogueEntry;
  price: TokenPrice;
  promptBytes: number;
  id: string;
  stopSequences: readonly string[] | undefined;
}

export async function relayMessages(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  a: MessagesRelayArgs,
): Promise<void> {
  const { start, abort, charge, entry } = a;
  const res = openEventStream(reply);
  const out = relayWrites(ctx, res, start, abort);
  const messages = new MessagesStream({ id: a.id, model: entry.id, stopSequences: a.stopSequences });
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
  out.pending.push(Buffer.from(messages.start(usage)));
  take(start.first);
  observeFirstFrame(ctx, request, reply, start);

  const idle = pinger(ctx.config.PROXY_MESSAGES_PING_MS).watch(() => {
    out.pending.push(Buffer.from(PING_EVENT));
    out.flush();
  });
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

  watch(ping: () => void): Watched & { stop(): void } {
    const w = { quiet: true, ping, stop: () => this.unwatch(w) };
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
