// POST /v1/chat/completions (CHAT-1..4): validate, resolve the model, hold credits, call an engine,
// settle from the engine's usage as the answer (JSON or a relayed stream) goes out.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalidApiKey } from '../../core/errors.ts';
import { KeyInvalidatedError } from '../auth/key-cache.ts';
import type { CallCharge } from '../billing/charge.ts';
import {
  chatPromptTokens,
  estimatedUsage,
  estimateTokens,
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
import { affinityKeyOf } from '../engine/picker.ts';
import { ClientClosedError, linkRequestAbort, type RequestAbort } from '../request-abort.ts';
import {
  type ChatCompletionRequest,
  chatCompletion,
  chatCompletionRequest,
  commonErrors,
} from '../schemas/openai.ts';
import { firstStreamEvent, relayStream, type StreamStart } from './chat-stream.ts';
import { tokenModel } from './resolve-model.ts';

/** Body keys the proxy writes itself (or, max_completion_tokens, folds into max_tokens). */
const NOT_FORWARDED = new Set(['messages', 'model', 'max_tokens', 'max_completion_tokens', 'stream_options']);

export async function chatRoutes(app: FastifyInstance, opts: { ctx: ProxyContext }) {
  const { ctx } = opts;
  app.post(
    '/chat/completions',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Create a chat completion',
        tags: ['chat-completions dialect'],
        body: chatCompletionRequest,
        response: { 200: chatCompletion, ...commonErrors },
      },
    },
    (request, reply) => handleChat(ctx, request, reply),
  );
}

async function handleChat(ctx: ProxyContext, request: FastifyRequest, reply: FastifyReply) {
  const body = request.body as ChatCompletionRequest;
  const { entry, price } = tokenModel(ctx.catalogue, request.principal, body.model, 'chat');
  request.metricModel = entry.id;
  const n = body.n ?? 1;
  const perChoice =
    body.max_completion_tokens ??
    body.max_tokens ??
    entry.maxOutputTokens ??
    ctx.config.PROXY_DEFAULT_MAX_TOKENS;
  const prompt = JSON.stringify(body.messages);
  const promptBytes =
    Buffer.byteLength(prompt) + (body.tools ? Buffer.byteLength(JSON.stringify(body.tools)) : 0);
  const quote = textQuote(price, chatPromptTokens(entry, body.messages, promptBytes), perChoice * n);
  const stream = body.stream === true;
  const affinityKey = affinityKeyOf(prompt, ctx.config.PROXY_PREFIX_AFFINITY_CHARS);
  const abort = linkRequestAbort(request, reply);

  const upstream = (outputTokens: number) => {
    // Written key by key: object rest and spread (copy the body, drop three keys, override two)
    // took ~1.4 us per request against ~0.25. The messages, usually most of the body, were
    // serialized once already (prompt) and are spliced in.
    let out = `{"messages":${prompt},"model":${JSON.stringify(entry.servedName ?? entry.id)}`;
    // Always bounded: the hold covers exactly this much output.
    out += `,"max_tokens":${Math.max(1, Math.floor(outputTokens / n))}`;
    const fields = body as Record<string, unknown>;
    for (const key in fields) {
      const value = fields[key];
      if (value === undefined || NOT_FORWARDED.has(key)) continue;
      out += `,${JSON.stringify(key)}:${JSON.stringify(value)}`;
    }
    if (stream) out += ',"stream_options":{"include_usage":true,"continuous_usage_stats":true}';
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
      affinityKey,
      tried,
    });
    if (call.statusCode >= 400) {
      call.release();
      throw await engineClientError(call, entry.id);
    }
    return call;
  };

  let charge: CallCharge | undefined;
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
    if (!stream) {
      const fields = modelFieldsOf(entry.id, entry.servedName ?? entry.id);
      const result = await charge.hold({
        run: async (out, cancel) => readCompletion(await startCall(out, cancel, new Set()), entry.id, fields),
        discard: () => {},
      });
      const reported =
        usageFromEngine(result.usage) ??
        estimatedUsage(promptBytes, estimateTokens(completionOutputBytes(result.body)));
      const bill = textBill(price, reported, { output: charge.allowance, input: entry.contextLength });
      if (bill.implausible) request.log.warn({ usage: reported }, 'the engine reported implausible usage');
      // The answer leaves once its settlement is in the journal (end of this event-loop turn).
      charge.settle(bill.cost, bill.usage, () => {
        abort.dispose();
        reply.type('application/json').send(result.body);
      });
      return reply;
    }
    const start = await charge.hold<StreamStart>({
      run: (out, cancel) => {
        const tried = new Set<string>();
        return firstStreamEvent(ctx.engine, cancel, () => startCall(out, cancel, tried));
      },
      discard: (s) => s.close(),
    });
    await relayStream(ctx, request, reply, { start, abort, charge, entry, price, body, promptBytes });
    return reply;
  } catch (err) {
    abort.dispose();
    charge?.release();
    throw requestFailure(err, abort);
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
