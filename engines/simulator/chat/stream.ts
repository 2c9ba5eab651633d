// Server-sent events for a streaming chat completion, shaped as vLLM 0.32 sends them (recorded in
// test/engines/fixtures/vllm-0.32): a role chunk per choice, one chunk per decode step — the last
// one carrying finish_reason (a separate empty-delta finish chunk only after tool-call arguments or
// when nothing was generated) — then (with include_usage) a usage chunk with empty choices, the
// only chunk with prompt_tokens_details and system_fingerprint, then `data: [DONE]`. With
// include_usage every chunk carries `usage: null`; with continuous_usage_stats (or vLLM's
// --enable-force-include-usage) every chunk carries running usage.

import type { ServerResponse } from 'node:http';
import { sleep } from '../http.ts';
import type { ChoicePlan, Step } from './plan.ts';
import type { ChatUsage } from './usage.ts';

type StreamFailure = 'mid-stream' | 'error-frame';

export interface StreamPlan {
  meta: { id: string; created: number; model: string; system_fingerprint: string };
  /** vLLM's prompt_tokens_details.created_cache_tokens: prompt tokens this request added to the cache. */
  createdCacheTokens: number;
  plans: ChoicePlan[];
  usage: ChatUsage;
  includeUsage: boolean;
  continuousUsage: boolean;
  failure: string | null;
  /** The error of an 'error-frame' failure (default: a simulated server error). */
  errorFrame?: Record<string, unknown> | undefined;
  /** performance.now() time at which the first token is due; step i is due itlMs × i later. */
  firstTokenAt: number;
  itlMs: number;
  onTokens: (n: number) => void;
  onFailure: (mode: StreamFailure) => void;
}

function deltaOf(step: Step): Record<string, unknown> {
  switch (step.kind) {
    case 'reasoning':
      return { reasoning: step.text }; // vLLM 0.32's name (earlier: reasoning_content)
    case 'content':
      return { content: step.text };
    case 'tool-start':
      return {
        content: null,
        tool_calls: [{ id: step.id, type: 'function', index: step.call, function: { name: step.name } }],
      };
    case 'tool-args':
      return { content: null, tool_calls: [{ index: step.call, function: { arguments: step.text } }] };
  }
}

function write(res: ServerResponse, signal: AbortSignal, frame: string): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  if (res.write(frame)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = () => {
      signal.removeEventListener('abort', fail);
      resolve();
    };
    const fail = () => {
      res.off('drain', done);
      reject(signal.reason);
    };
    res.once('drain', done);
    signal.addEventListener('abort', fail, { once: true });
  });
}

/** Streams the plan; resolves true when it ran to [DONE], false when an injected failure cut it. */
export async function streamChat(res: ServerResponse, signal: AbortSignal, s: StreamPlan): Promise<boolean> {
  const { usage } = s;
  let completionSoFar = 0;
  const usageField = (): Record<string, unknown> => {
    if (s.continuousUsage) {
      return {
        usage: {
          prompt_tokens: usage.prompt_tokens,
          total_tokens: usage.prompt_tokens + completionSoFar,
          completion_tokens: completionSoFar,
          completion_tokens_details: null,
        },
      };
    }
    return s.includeUsage ? { usage: null } : {};
  };
  const { id, created, model, system_fingerprint } = s.meta;
  const head = `{"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)}`;
  const frame = (choices: unknown[], extra: Record<string, unknown>) => {
    const tail = JSON.stringify({ choices, ...extra });
    return `data: ${head},${tail.slice(1)}\n\n`;
  };
  // The first chunk echoes vLLM's prompt_token_ids / prompt_text (null unless asked for).
  const roleChunk = (choices: unknown[]) =>
    frame(choices, { ...usageField(), prompt_token_ids: null, prompt_text: null });
  const chunk = (choices: unknown[]) => frame(choices, usageField());
  const choice = (
    index: number,
    delta: Record<string, unknown>,
    finishReason: string | null = null,
    stopReason: string | null = null,
  ) => ({
    index,
    delta,
    logprobs: null,
    finish_reason: finishReason,
    ...(finishReason === null ? {} : { stop_reason: stopReason }),
    token_ids: null,
  });

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  for (const p of s.plans) {
    const role = {
      index: p.index,
      delta: { role: 'assistant', content: '' },
      logprobs: null,
      finish_reason: null,
    };
    await write(res, signal, roleChunk([role]));
  }
  const totalSteps = Math.max(0, ...s.plans.map((p) => p.steps.length));
  const failAt = s.failure === 'mid-stream' || s.failure === 'error-frame' ? Math.floor(totalSteps / 2) : -1;
  for (let i = 0; i <= totalSteps; i++) {
    if (i === failAt) {
      const mode = s.failure as StreamFailure;
      s.onFailure(mode);
      if (mode === 'mid-stream') {
        // Let what was written reach the client first, then drop the connection without [DONE].
        await new Promise<void>((resolve) => res.write(':\n\n', () => resolve()));
        res.destroy();
        return false;
      }
      const error = s.errorFrame ?? {
        message: 'simulated engine failure mid-stream',
        type: 'server_error',
        param: null,
        code: 'server_error',
      };
      await write(res, signal, `data: ${JSON.stringify({ error })}\n\n`);
      res.end('data: [DONE]\n\n');
      return false;
    }
    if (i === totalSteps) break;
    const wait = s.firstTokenAt + i * s.itlMs - performance.now();
    if (wait >= 1) await sleep(wait, signal);
    else if (signal.aborted) throw signal.reason;
    for (const p of s.plans) {
      const step = p.steps[i];
      const last = i === p.steps.length - 1;
      if (step) {
        completionSoFar += step.tokens;
        s.onTokens(step.tokens);
        // vLLM sends the last token with finish_reason; tool-call arguments get a finish chunk of their own.
        const joined = last && step.kind !== 'tool-args' && step.kind !== 'tool-start';
        await write(
          res,
          signal,
          chunk([
            choice(p.index, deltaOf(step), joined ? p.finishReason : null, joined ? p.stopReason : null),
          ]),
        );
        if (joined) continue;
      }
      if (last || (p.steps.length === 0 && i === 0)) {
        await write(res, signal, chunk([choice(p.index, {}, p.finishReason, p.stopReason)]));
      }
    }
  }
  for (const p of s.plans) {
    if (p.steps.length === 0 && totalSteps === 0)
      await write(res, signal, chunk([choice(p.index, {}, p.finishReason, p.stopReason)]));
  }
  if (s.includeUsage) {
    const final = {
      prompt_tokens: usage.prompt_tokens,
      total_tokens: usage.total_tokens,
      completion_tokens: usage.completion_tokens,
      prompt_tokens_details: {
        cached_tokens: usage.prompt_tokens_details.cached_tokens,
        created_cache_tokens: s.createdCacheTokens,
      },
      ...(usage.completion_tokens_details !== null
        ? { completion_tokens_details: usage.completion_tokens_details }
        : {}),
    };
    await write(res, signal, frame([], { usage: final, system_fingerprint }));
  }
  res.end('data: [DONE]\n\n');
  return true;
}
