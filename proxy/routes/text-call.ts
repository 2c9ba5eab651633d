// One text call's life, whatever dialect asked for it (chat completions, Messages): the credit
// hold sized from the prompt, the engine request built and sent (failing over between endpoints),
// the answer read or relayed, the charge settled from the engine's usage before the last bytes
// leave. A dialect brings its prompt in chat form and renders the answer; the money path is this
// one (DESIGN "Money"), so every rule of it holds for both surfaces.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CatalogueEntry, TokenPrice } from '../../core/catalogue/index.ts';
import { ApiError, invalidApiKey, invalidRequest } from '../../core/errors.ts';
import { ClientClosedError } from '../../http/client-closed.ts';
import { KeyInvalidatedError } from '../auth/key-cache.ts';
import type { CallCharge } from '../billing/charge.ts';
import {
  chatPromptTokens,
  estimatedUsage,
  estimateTokens,
  type TextUsage,
  textBill,
  textQuote,
  usageFromEngine,
} from '../billing/text-quote.ts';
import type { ProxyContext } from '../context.ts';
import { type ModelFields, modelFieldsOf } from '../dialects/openai/chunks.ts';
import {
  type CompletionOut,
  completionFast,
  completionOutputBytes,
  completionSlow,
} from '../dialects/openai/completion.ts';
import { callEngine, type EngineCall, engineClientError } from '../engine/call.ts';
import type { Cancel } from '../engine/cancel.ts';
import { linkRequestAbort, type RequestAbort } from '../request-abort.ts';
import { firstStreamEvent, type StreamStart } from './chat-stream.ts';
import { outputThatFits, promptTextBytes, tokensAtLeast } from './context-fit.ts';
import { engineTokenCount } from './token-count.ts';

/** Body keys the proxy writes itself (or, max_completion_tokens, folds into max_tokens). */
const NOT_FORWARDED = new Set([
  'messages',
  'model',
  'max_tokens',
  'max_completion_tokens',
  'stream',
  'stream_options',
]);

export interface TextCall {
  entry: CatalogueEntry;
  price: TokenPrice;
  /** The chat messages, and the same serialized once (spliced into the engine request). */
  messages: readonly { content?: unknown }[];
  prompt: string;
  /** Bytes the hold counts for the prompt (messages and tool definitions). */
  promptBytes: number;
  /** Other chat-request fields, forwarded key by key (NOT_FORWARDED ones skipped). */
  fields: Record<string, unknown>;
  /** Output tokens allowed per choice, and choices. */
  perChoice: number;
  /** The request field that set perChoice (named when the hold cannot be made of it). */
  perChoiceField: string;
  /**
   * Whether the caller asked for perChoice (refused if it does not fit beside the prompt in the
   * model's context) or it is a default (lowered to what the context leaves).
   */
  asked: boolean;
  n: number;
  stream: boolean;
  affinityKey: string | undefined;
}

/** What a relay is handed once the engine's stream has started. */
export interface StreamRelay {
  start: StreamStart;
  abort: RequestAbort;
  charge: CallCharge;
}

/**
 * A dialect's watch over a stream's wait for the engine's first frame (Messages: the head, then
 * pings, while a slow engine queues or prefills).
 */
export interface FirstFrameWait {
  /**
   * The call failed before the engine's first frame. True when the failure is answered already
   * (the stream's head was out, so it went in-band, or the client is gone); false when nothing
   * was written and the error is to be sent as an ordinary response.
   */
  failed(err: unknown): boolean;
}

export interface TextRender<W extends FirstFrameWait = FirstFrameWait> {
  /** Sends a whole answer; `usage` is what was billed (a dialect that reports usage reports this). */
  json(reply: FastifyReply, result: CompletionOut, usage: TextUsage): void;
  /**
   * Streams only, optional: called as the hold is sought and the engine asked, before its first
   * frame; what it returns is handed to `stream`, or told the call failed.
   */
  awaitFirstFrame?(charge: CallCharge): W;
  /** Relays a started stream and settles its charge (before its last bytes leave). */
  stream(relay: StreamRelay & { wait: W | undefined }): Promise<void>;
}

export async function runTextCall<W extends FirstFrameWait>(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  t: TextCall,
  render: TextRender<W>,
): Promise<FastifyReply> {
  const { entry } = t;
  request.metricModel = entry.id;
  const promptAtMost = chatPromptTokens(entry, t.messages, t.promptBytes);
  let perChoice = t.perChoice;
  // When the prompt's upper bound and the output may not fit the context together, the engine's
  // tokenizer says exactly (one more round trip, for such calls only); where none answers, only
  // what the text's lower bound proves too long is refused.
  const context = entry.contextLength;
  if (context !== undefined && promptAtMost + perChoice > context) {
    const counted = await engineTokenCount(ctx, request, reply, entry, t.prompt, t.fields);
    const prompt =
      counted === null
        ? { tokens: tokensAtLeast(promptTextBytes(t.messages)), exact: false }
        : { tokens: counted, exact: true };
    perChoice = outputThatFits(context, prompt, perChoice, t.asked ? t.perChoiceField : null);
  }
  let quote: ReturnType<typeof textQuote>;
  try {
    quote = textQuote(t.price, promptAtMost, perChoice * t.n);
  } catch (err) {
    // Past 2^53 nano (or tokens): no hold can be made of it, whatever the balance.
    if (err instanceof RangeError)
      throw invalidRequest(
        `${t.perChoiceField} × n is too large to be paid for: ${perChoice} × ${t.n}.`,
        t.perChoiceField,
      );
    throw err;
  }
  const abort = linkRequestAbort(request, reply);

  const upstream = (outputTokens: number) => {
    // Written key by key: object rest and spread (copy the body, drop three keys, override two)
    // took ~1.4 us per request against ~0.25. The messages, usually most of the body, were
    // serialized once already (prompt) and are spliced in.
    let out = `{"messages":${t.prompt},"model":${JSON.stringify(entry.servedName ?? entry.id)}`;
    // Always bounded: the hold covers exactly this much output.
    out += `,"max_tokens":${Math.max(1, Math.floor(outputTokens / t.n))}`;
    const fields = t.fields;
    for (const key in fields) {
      const value = fields[key];
      if (value === undefined || NOT_FORWARDED.has(key)) continue;
      out += `,${JSON.stringify(key)}:${JSON.stringify(value)}`;
    }
    if (t.stream)
      out += ',"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}';
    return `${out}}`;
  };
  // Each run of the call (a lowered rerun near the limit too) may use any endpoint; failover
  // within one run skips the endpoints that run already tried.
  const startCall = async (outputTokens: number, cancel: Cancel, tried: Set<string>): Promise<EngineCall> => {
    const call = await callEngine(ctx.engine, {
      entry,
      path: '/v1/chat/completions',
      payload: upstream(outputTokens),
      cancel,
      affinityKey: t.affinityKey,
      tried,
    });
    if (call.statusCode >= 400) {
      call.release();
      throw await engineClientError(call, entry.id);
    }
    return call;
  };

  let charge: CallCharge | undefined;
  let wait: W | undefined;
  try {
    charge = ctx.billing.open(
      {
        principal: request.principal,
        model: entry.id,
        kind: 'chat',
        requestId: request.id,
        cancel: abort.cancel,
      },
      quote,
    );
    if (!t.stream) {
      const fields = modelFieldsOf(entry.id, entry.servedName ?? entry.id);
      const result = await charge.hold({
        run: async (out, cancel) => readCompletion(await startCall(out, cancel, new Set()), entry.id, fields),
        discard: () => {},
      });
      const reported =
        usageFromEngine(result.usage) ??
        estimatedUsage(t.promptBytes, estimateTokens(completionOutputBytes(result.body)));
      const bill = textBill(t.price, reported, { output: charge.allowance, input: entry.contextLength });
      if (bill.implausible) request.log.warn({ usage: reported }, 'the engine reported implausible usage');
      // The answer leaves once its settlement is in the journal (end of this event-loop turn).
      charge.settle(bill.cost, bill.usage, () => {
        abort.dispose();
        render.json(reply, result, bill.usage);
      });
      return reply;
    }
    wait = render.awaitFirstFrame?.(charge);
    const start = await charge.hold<StreamStart>({
      run: (out, cancel) => {
        const tried = new Set<string>();
        return firstStreamEvent(ctx.engine, cancel, () => startCall(out, cancel, tried));
      },
      discard: (s) => s.close(),
    });
    await render.stream({ start, abort, charge, wait });
    return reply;
  } catch (err) {
    abort.dispose();
    charge?.release();
    const failure = requestFailure(err, abort);
    if (wait?.failed(failure)) return reply;
    throw failure;
  }
}

async function readCompletion(call: EngineCall, model: string, fields: ModelFields): Promise<CompletionOut> {
  try {
    const bytes = await call.body.bytes();
    return completionFast(bytes, fields) ?? completionSlow(bytes, model);
  } catch (err) {
    throw new ApiError('server_error', 'The engine sent an unreadable response.', { cause: err });
  } finally {
    call.release();
  }
}

/** The error to answer with when the call failed before anything was sent. */
export function requestFailure(err: unknown, abort: RequestAbort): unknown {
  const reason = abort.cancel.aborted ? abort.cancel.reason : undefined;
  if (reason instanceof KeyInvalidatedError || err instanceof KeyInvalidatedError) return invalidApiKey();
  if (reason instanceof ClientClosedError) return reason; // nobody is listening; logged only
  if (reason instanceof ApiError) return reason; // the proxy ended the call (shutdown)
  return err;
}

/** The bill of a stream that ended: the engine's last reported usage, else the proxy's count. */
export function streamBill(
  request: FastifyRequest,
  t: { price: TokenPrice; entry: CatalogueEntry; promptBytes: number; charge: CallCharge },
  usage: TextUsage | null,
  contentFrames: number,
): { cost: number; usage: TextUsage } {
  const reported = usage ?? estimatedUsage(t.promptBytes, contentFrames);
  const bill = textBill(t.price, reported, { output: t.charge.allowance, input: t.entry.contextLength });
  if (bill.implausible) request.log.warn({ usage: reported }, 'the engine reported implausible usage');
  return bill;
}
