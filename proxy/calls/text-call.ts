// One text call, whatever dialect asked for it (chat completions, Messages, Responses): the output that fits
// the model's context, the credit hold sized from the prompt, the engine request built and sent
// (failing over between endpoints), then the one metered lifecycle (./metered.ts) with the answer
// read once by the dialect, or relayed (./relay.ts) through the dialect's translator. A dialect
// brings its prompt in chat form, admitted by the policy door (./text-door.ts), and its TextDialect; the money path is this one (DESIGN "Money"),
// so every rule of it holds for both surfaces.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CatalogueEntry, TokenPrice } from '../../core/catalogue/index.ts';
import { ApiError, invalidRequest } from '../../core/errors.ts';
import { callCost } from '../billing/call-cost.ts';
import { chatPromptTokens, textBill, textQuote } from '../billing/text-quote.ts';
import type { ProxyContext } from '../context.ts';
import type { TextDialect } from '../dialects/translator.ts';
import { callEngine, type EngineCall, engineClientError } from '../engine/call.ts';
import type { Cancel } from '../engine/cancel.ts';
import { estimatedUsage, estimateTokens, usageFromEngine } from '../engine/frames/index.ts';
import type { EndpointScore } from '../engine/kv-index/prefix-routing.ts';
import { affinityKeyOf } from '../engine/picker.ts';
import type { RequestTrace } from '../tracing/tracing.ts';
import { outputThatFits, promptTextBytes, tokensAtLeast } from './context-fit.ts';
import { EarlyHead } from './early-head.ts';
import { firstStreamEvent, type StreamStart } from './engine-stream.ts';
import { finishReasonIn } from './finish-reason.ts';
import { meteredCall, type Quote } from './metered.ts';
import { relay } from './relay.ts';
import type { AdmittedPrompt, OutputBound } from './text-door.ts';
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
  /** The translated request, through the policy door (./text-door.ts): no other way in. */
  request: AdmittedPrompt;
  /** Output tokens allowed per choice, decided by the door too. */
  output: OutputBound;
  n: number;
  stream: boolean;
  /**
   * The key that sends equal prompts to the engine holding their prefix, where the request chose
   * one (a cache_control breakpoint, a prompt_cache_key); else the prompt's first
   * PROXY_PREFIX_AFFINITY_CHARS characters are.
   */
  affinityKey: string | undefined;
  /** Prefix-cache routing's score for this prompt, set once per call (runTextCall). */
  score?: EndpointScore;
}

export async function runTextCall<A>(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  t: TextCall,
  dialect: TextDialect<A>,
): Promise<FastifyReply> {
  request.metricModel = t.entry.id;
  // Hosted tools offered and left out (./text-door.ts): the client is told, not failed.
  if (t.request.notOffered.length > 0)
    reply.header('x-modelplane-tools-not-offered', t.request.notOffered.join(', '));
  t.affinityKey ??= affinityKeyOf(t.request.prompt, ctx.config.PROXY_PREFIX_AFFINITY_CHARS);
  // Tokenized on a worker thread while this call goes on; never waited on past its time budget.
  const scoring = ctx.engine.routing?.scorer(
    t.entry,
    { messages: t.request.messages, tools: t.request.fields.tools },
    t.request.prompt,
  );
  const promptAtMost = chatPromptTokens(t.entry, t.request.messages, t.request.promptBytes);
  const perChoice = await fittedOutput(ctx, request, reply, t, promptAtMost);
  t.score = await scoring;
  // An asked bound above the model's limit is served lowered (./text-door.ts admitOutput): the
  // client is told the bound it ran with.
  if (t.output.clampedFrom !== null) reply.header('x-modelplane-output-clamped', String(perChoice));
  const quote = textCallQuote(t, promptAtMost, perChoice);
  return t.stream
    ? streamedCall(ctx, request, reply, t, quote, dialect)
    : wholeCall(ctx, request, reply, t, quote, dialect);
}

/**
 * The output per choice the hold is made for. When the prompt's upper bound and the output may
 * not fit the context together, the engine's tokenizer says exactly (one more round trip, for
 * such calls only); where none answers, only what the text's lower bound proves too long is
 * refused.
 */
async function fittedOutput(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  t: TextCall,
  promptAtMost: number,
): Promise<number> {
  const context = t.entry.contextLength;
  const out = t.output;
  if (context === undefined || promptAtMost + out.perChoice <= context) return out.perChoice;
  const counted = await engineTokenCount(ctx, request, reply, t.entry, t.request);
  const prompt =
    counted === null
      ? { tokens: tokensAtLeast(promptTextBytes(t.request.messages)), exact: false }
      : { tokens: counted, exact: true };
  return outputThatFits(context, prompt, out.perChoice, out.asked ? out.field : null);
}

function textCallQuote(t: TextCall, promptAtMost: number, perChoice: number): Quote {
  try {
    return textQuote(t.price, promptAtMost, perChoice * t.n);
  } catch (err) {
    // Past 2^53 nano (or tokens): no hold can be made of it, whatever the balance.
    if (err instanceof RangeError)
      throw invalidRequest(
        `${t.output.field} × n is too large to be paid for: ${perChoice} × ${t.n}.`,
        t.output.field,
      );
    throw err;
  }
}

/**
 * The engine request's body. Written key by key: object rest and spread (copy the body, drop three
 * keys, override two) took ~1.4 us per request against ~0.25. The messages, usually most of the
 * body, were serialized once already (prompt) and are spliced in.
 */
export function engineChatBody(t: TextCall, outputTokens: number): string {
  let out = `{"messages":${t.request.prompt},"model":${JSON.stringify(t.entry.servedName ?? t.entry.id)}`;
  // Always bounded: the hold covers exactly this much output.
  out += `,"max_tokens":${Math.max(1, Math.floor(outputTokens / t.n))}`;
  const fields = t.request.fields;
  for (const key in fields) {
    const value = fields[key];
    if (value === undefined || NOT_FORWARDED.has(key)) continue;
    out += `,${JSON.stringify(key)}:${JSON.stringify(value)}`;
  }
  if (t.stream) out += ',"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}';
  return `${out}}`;
}

/**
 * Sends the chat request. Each run of the call (a lowered rerun near the limit too) may use any
 * endpoint; failover within one run skips the endpoints that run already tried.
 */
async function startChat(
  ctx: ProxyContext,
  t: TextCall,
  outputTokens: number,
  cancel: Cancel,
  tried: Set<string>,
  trace: RequestTrace | undefined,
  account: string,
  onHeld?: () => void,
): Promise<EngineCall> {
  const call = await callEngine(ctx.engine, {
    onHeld,
    account,
    bytes: t.request.promptBytes,
    entry: t.entry,
    path: '/v1/chat/completions',
    payload: engineChatBody(t, outputTokens),
    cancel,
    affinityKey: t.affinityKey,
    score: t.score,
    tried,
    trace,
  });
  if (call.statusCode >= 400) {
    call.release();
    throw await engineClientError(call, t.entry.id);
  }
  return call;
}

function wholeCall<A>(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  t: TextCall,
  quote: Quote,
  dialect: TextDialect<A>,
): Promise<FastifyReply> {
  return meteredCall(ctx, request, reply, {
    kind: 'chat',
    model: t.entry.id,
    quote,
    run: async (out, cancel) =>
      readAnswer(
        await startChat(ctx, t, out, cancel, new Set(), request.trace, request.principal.accountId),
        dialect,
      ),
    bill: (result, charge) => {
      request.callFinish = result.finish;
      const reported =
        usageFromEngine(result.usage) ??
        estimatedUsage(t.request.promptBytes, estimateTokens(dialect.outputBytes(result.answer)));
      const bill = textBill(t.price, reported, { output: charge.allowance, input: t.entry.contextLength });
      if (bill.implausible) request.log.warn({ usage: reported }, 'the engine reported implausible usage');
      return {
        cost: bill.cost,
        counts: bill.usage,
        deliver: () => dialect.send(reply, result.answer, bill.usage, callCost(request, bill.cost)),
      };
    },
  });
}

async function readAnswer<A>(
  call: EngineCall,
  dialect: TextDialect<A>,
): Promise<{ answer: A; usage: unknown; finish: string | null }> {
  try {
    const bytes = await call.body.bytes();
    return { ...dialect.read(bytes), finish: finishReasonIn(bytes) };
  } catch (err) {
    throw new ApiError('server_error', 'The engine sent an unreadable response.', { cause: err });
  } finally {
    call.release();
  }
}

function streamedCall<A>(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  t: TextCall,
  quote: Quote,
  dialect: TextDialect<A>,
): Promise<FastifyReply> {
  const translator = dialect.translator();
  let early: EarlyHead | undefined;
  return meteredCall<StreamStart>(ctx, request, reply, {
    kind: 'chat',
    model: t.entry.id,
    quote,
    opened: (charge) => {
      early = new EarlyHead(request, reply, translator, {
        charge,
        estimateInput: dialect.estimateInput ?? (() => 0),
        pingMs: ctx.config.PROXY_MESSAGES_PING_MS,
        armed: translator.ping !== null && dialect.estimateInput !== undefined,
      });
    },
    run: (out, cancel) => {
      const tried = new Set<string>();
      const held = () => early?.arm();
      return firstStreamEvent(ctx.engine, cancel, () =>
        startChat(ctx, t, out, cancel, tried, request.trace, request.principal.accountId, held),
      );
    },
    discard: (s) => s.close(),
    relay: (start, charge, abort) =>
      relay(ctx, request, reply, {
        start,
        abort,
        charge,
        entry: t.entry,
        price: t.price,
        promptBytes: t.request.promptBytes,
        translator,
        early,
      }),
    failed: (err) => early?.failed(err) ?? false,
  });
}
