// POST /v1/chat/completions: admission, prefill (TTFT), then the non-streaming or streaming reply.

import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { clientGone, latencyHeader, type SimContext, SYSTEM_FINGERPRINT } from '../context.ts';
import { chooseFailure } from '../failure.ts';
import { badRequest, HttpError, headerValue, parseJsonObject, sendError, sleep } from '../http.ts';
import { tokenize } from '../tokenizer.ts';
import { type ChoicePlan, planChoices, promptText } from './plan.ts';
import { engineRefusal, refusalError, sendRefusal } from './refusal.ts';
import { type ChatRequest, parseChatRequest } from './request.ts';
import { streamChat } from './stream.ts';
import { type ChatUsage, usageOf } from './usage.ts';

/**
 * Images and the chat template are prompt tokens too (vLLM counts both in prompt_tokens): the
 * template's tokens around each message, and the reply's header unless add_generation_prompt is off.
 */
export function promptTokenCount(ctx: SimContext, chat: ChatRequest, textTokens: number): number {
  const images = chat.messages.reduce((n, m) => n + m.images, 0);
  const templated = chat.messages.length + (chat.addGenerationPrompt ? 1 : 0);
  return textTokens + images * ctx.options.imageTokens + templated * ctx.options.templateTokens;
}

export interface ChatTiming {
  ttftMs: number;
  itlMs: number;
}

export async function handleChat(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  _params: Record<string, string>,
  body: Buffer,
): Promise<void> {
  const json = parseJsonObject(body);
  const chat = parseChatRequest(json);
  if (
    ctx.options.knownModelsOnly &&
    !ctx.options.models.includes(chat.model) &&
    !ctx.adapters.has(chat.model)
  )
    throw new HttpError(404, `The model \`${chat.model}\` does not exist.`, 'model');
  const failure = chooseFailure(headerValue(req, 'x-sim-fail'), ctx.options);
  const timing: ChatTiming = {
    ttftMs: latencyHeader(req, 'x-sim-ttft-ms', ctx.options.ttftMs),
    itlMs: latencyHeader(req, 'x-sim-itl-ms', ctx.options.itlMs),
  };
  const promptTokens = tokenize(promptText(chat));
  const promptCount = promptTokenCount(ctx, chat, promptTokens.length);
  const limit = ctx.options.maxModelLen;
  // vLLM 0.32 refuses only a prompt that leaves no room for one output token; a max_tokens that
  // does not fit beside the prompt is lowered to the room left (200, as recorded), not refused.
  if (promptCount + 1 > limit) {
    throw badRequest(
      `This model's maximum context length is ${limit} tokens. However, your prompt contains ` +
        `${promptCount} input tokens, which exceeds this limit even without any output tokens. ` +
        'Please reduce the length of the input prompt.',
      'input_tokens',
    );
  }
  const maxTokens = Math.min(chat.maxTokens ?? limit - promptCount, limit - promptCount);
  // Checked by vLLM's engine, not its HTTP layer: a stream's refusal comes after a 200 head.
  const refuse = ctx.options.refuseInEngine;
  const refusal = engineRefusal(json, refuse === 'first-frame');
  if (refusal !== null) return sendRefusal(res, refusal, chat.stream);
  // Failure injection only: the refusal frame halfway through a stream's content.
  const lateRefusal =
    refuse === 'after-content' && chat.stream ? refusalError(engineRefusal(json, true)!) : undefined;
  const plans = planChoices(chat, maxTokens);
  const completionTokens = plans.reduce((sum, p) => sum + p.completionTokens, 0);

  const signal = clientGone(res);
  const release = await ctx.scheduler.acquire(chat.model, signal).catch((err: unknown) => {
    if (signal.aborted) ctx.metrics.aborted++;
    throw err;
  });
  const kvReserved = promptCount + completionTokens;
  ctx.scheduler.kvTokens += kvReserved;
  let generated = 0;
  try {
    const { cached, created } = ctx.prefixCache.lookupAndInsert(chat.model, promptTokens);
    ctx.metrics.recordPrompt(chat.model, promptCount, cached);
    const admittedAt = performance.now();
    // Prefill: what the prefix cache did not hold is computed (options.prefillMsPer1kTokens).
    timing.ttftMs += ((promptCount - cached) * ctx.options.prefillMsPer1kTokens) / 1000;
    // With earlyRoleFrame the stream waits for its first token itself (firstTokenAt), after its role frames.
    if (!(chat.stream && ctx.options.earlyRoleFrame)) await sleep(timing.ttftMs, signal);
    if (failure === 'before-first-byte' || failure === 'reset') {
      ctx.metrics.injectedFailures[failure]++;
      if (failure === 'reset') res.destroy();
      else
        sendError(
          res,
          new HttpError(500, 'simulated engine failure before the first byte', null, 'server_error'),
        );
      return;
    }
    const reasoningTokens = plans.reduce(
      (sum, p) => sum + p.steps.reduce((n, s) => n + (s.kind === 'reasoning' ? s.tokens : 0), 0),
      0,
    );
    const usage = usageOf(
      promptCount,
      cached,
      completionTokens,
      ctx.options.reasoningTokensInUsage ? reasoningTokens : null,
    );
    const meta = {
      id: `chatcmpl-${randomBytes(12).toString('hex')}`,
      created: Math.floor(Date.now() / 1000),
      model: chat.model,
      system_fingerprint: SYSTEM_FINGERPRINT,
    };
    let completed = true;
    if (chat.stream) {
      completed = await streamChat(res, signal, {
        meta,
        createdCacheTokens: created,
        plans,
        usage,
        // vLLM's --enable-force-include-usage: running usage on every chunk and the usage chunk, asked or not.
        includeUsage: chat.includeUsage || ctx.options.forceIncludeUsage,
        continuousUsage: chat.continuousUsage || ctx.options.forceIncludeUsage,
        failure: lateRefusal === undefined ? failure : 'error-frame',
        errorFrame: lateRefusal,
        firstTokenAt: admittedAt + timing.ttftMs,
        itlMs: timing.itlMs,
        onTokens: (n) => {
          generated += n;
        },
        onFailure: (mode) => {
          ctx.metrics.injectedFailures[mode]++;
        },
      });
    } else {
      const steps = Math.max(0, ...plans.map((p) => p.steps.length));
      await sleep(timing.itlMs * Math.max(0, steps - 1), signal);
      generated = completionTokens;
      const body = JSON.stringify(completionBody(meta, plans, usage, created));
      if (failure === 'mid-stream') {
        ctx.metrics.injectedFailures[failure]++;
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.write(body.slice(0, Math.floor(body.length / 2)), () => res.destroy());
        return;
      }
      if (failure === 'error-frame') {
        // A failure during generation of a non-streamed reply can only be an error status.
        ctx.metrics.injectedFailures[failure]++;
        sendError(
          res,
          new HttpError(500, 'simulated engine failure during generation', null, 'server_error'),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    }
    if (completed) {
      ctx.metrics.recordFinished(
        chat.model,
        plans.map((p) => p.finishReason),
      );
    }
  } catch (err) {
    if (signal.aborted) {
      ctx.metrics.aborted++;
      return;
    }
    throw err;
  } finally {
    ctx.metrics.recordGenerated(chat.model, generated);
    ctx.scheduler.kvTokens -= kvReserved;
    release();
  }
}

/** A non-streamed reply, with the fields (and their order) vLLM 0.32 sends. */
function completionBody(
  meta: { id: string; created: number; model: string; system_fingerprint: string },
  plans: ChoicePlan[],
  usage: ChatUsage,
  createdCacheTokens: number,
) {
  return {
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    choices: plans.map((p) => ({
      index: p.index,
      message: {
        role: 'assistant',
        content: p.content,
        refusal: null,
        annotations: null,
        audio: null,
        function_call: null,
        ...(p.toolCalls.length > 0
          ? {
              tool_calls: p.toolCalls.map((c) => ({
                id: c.id,
                type: 'function',
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
        reasoning: p.reasoning,
      },
      logprobs: null,
      finish_reason: p.finishReason,
      stop_reason: p.stopReason,
      token_ids: null,
      routed_experts: null,
    })),
    service_tier: null,
    system_fingerprint: meta.system_fingerprint,
    usage: {
      prompt_tokens: usage.prompt_tokens,
      total_tokens: usage.total_tokens,
      completion_tokens: usage.completion_tokens,
      prompt_tokens_details: {
        cached_tokens: usage.prompt_tokens_details.cached_tokens,
        created_cache_tokens: createdCacheTokens,
        multimodal_tokens: null,
      },
      completion_tokens_details: usage.completion_tokens_details,
    },
    prompt_logprobs: null,
    prompt_token_ids: null,
    prompt_text: null,
    kv_transfer_params: null,
    ec_transfer_params: null,
    metrics: null,
  };
}
