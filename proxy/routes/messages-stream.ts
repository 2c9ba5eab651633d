// Relaying an engine's chat stream as Messages events (MSG-2, MSG-7): the same pump, backpressure
// and settlement as the chat relay (./chat-stream.ts), with each engine chunk translated by
// dialects/messages/stream.ts. The head is written once the engine's first frame is in hand (so
// an engine that dies before it fails over or gets a real 500); from then on a failure is an
// `event: error`, which the Anthropic SDKs raise, and a `ping` goes out whenever the engine has
// been silent for PROXY_MESSAGES_PING_MS (long prefill of a later block, thinking).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CatalogueEntry, TokenPrice } from '../../core/catalogue/index.ts';
import { type TextUsage, usageFromEngine } from '../billing/text-quote.ts';
import type { ProxyContext } from '../context.ts';
import { messagesErrorBody } from '../dialects/messages/error-body.ts';
import { type ChatChunk, MessagesStream, PING_EVENT } from '../dialects/messages/stream.ts';
import { hasContent } from '../dialects/openai/chunks.ts';
import type { SseEvent } from '../engine/sse.ts';
import {
  observeFirstFrame,
  PendingWrites,
  parseChunk,
  pumpEvents,
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
  const res = reply.raw;
  reply.hijack();
  res.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string | string[]>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  const out = new PendingWrites(res, start.events);
  const messages = new MessagesStream({ id: a.id, model: entry.id, stopSequences: a.stopSequences });
  let usage: TextUsage | null = usageFromEngine(start.first.usage);
  let contentFrames = 0;
  const take = (chunk: Record<string, unknown>): void => {
    if (chunk.error !== undefined) throw new Error(`engine error frame: ${JSON.stringify(chunk.error)}`);
    const u = usageFromEngine(chunk.usage);
    if (u !== null) usage = u;
    if (hasContent(chunk)) contentFrames++;
    const events = messages.chunk(chunk as ChatChunk);
    if (events !== '') out.pending.push(Buffer.from(events));
  };
  out.pending.push(Buffer.from(messages.start(usage)));
  take(start.first);
  observeFirstFrame(ctx, request, reply, start);

  let lastWrite = performance.now();
  const frame = (ev: SseEvent): void => {
    lastWrite = performance.now();
    take(parseChunk(ev.data));
  };
  const pingMs = ctx.config.PROXY_MESSAGES_PING_MS;
  const ping = setInterval(
    () => {
      if (performance.now() - lastWrite < pingMs) return;
      lastWrite = performance.now();
      out.pending.push(Buffer.from(PING_EVENT));
      out.flush();
    },
    Math.max(10, Math.floor(pingMs / 4)),
  );
  let ended: { sawDone: boolean; failure: unknown };
  try {
    ended = await pumpEvents(start, out, frame);
  } finally {
    clearInterval(ping);
  }
  abort.dispose();

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
