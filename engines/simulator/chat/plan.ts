// What each choice of a chat completion will emit, token by token, decided up front so streaming and
// non-streaming responses carry exactly the same output and usage.

import { hash53 } from '../hash.ts';
import { applyStop, generateTokens } from '../text-generator.ts';
import { countTokens, tokenize } from '../tokenizer.ts';
import type { ChatRequest } from './request.ts';
import { type PlannedToolCall, planToolCalls } from './tools.ts';

export type FinishReason = 'stop' | 'length' | 'tool_calls';

/** One decode step: one streamed delta. A tool call's name is one step worth `tokens` tokens. */
export type Step =
  | { kind: 'content'; text: string; tokens: number }
  | { kind: 'tool-start'; call: number; id: string; name: string; tokens: number }
  | { kind: 'tool-args'; call: number; text: string; tokens: number };

export interface ChoicePlan {
  index: number;
  steps: Step[];
  finishReason: FinishReason;
  /** vLLM's `stop_reason`: the stop string that ended the choice, else null. */
  stopReason: string | null;
  content: string | null;
  toolCalls: PlannedToolCall[];
  completionTokens: number;
}

/** A stable key for "the prompt": everything that would change a real model's output. */
export function promptKey(req: ChatRequest): string {
  const key = req.messages.map((m) => `${m.role}\u0001${m.text}`).join('\u0002');
  return req.seed === null ? key : `${key}\u0003${req.seed}`;
}

/** The prompt as the tokenizer sees it: message texts joined by newlines (no template tokens). */
export function promptText(req: ChatRequest): string {
  return req.messages.map((m) => m.text).join('\n');
}

function planTools(calls: PlannedToolCall[], budget: number): Omit<ChoicePlan, 'index'> {
  const steps: Step[] = [];
  const kept: PlannedToolCall[] = [];
  let used = 0;
  let truncated = false;
  for (const [call, tc] of calls.entries()) {
    const nameTokens = Math.max(1, countTokens(tc.name));
    if (used + nameTokens > budget) {
      truncated = true;
      break;
    }
    used += nameTokens;
    steps.push({ kind: 'tool-start', call, id: tc.id, name: tc.name, tokens: nameTokens });
    const pieces = tokenize(tc.arguments);
    const fit = pieces.slice(0, budget - used);
    for (const text of fit) steps.push({ kind: 'tool-args', call, text, tokens: 1 });
    used += fit.length;
    kept.push({ ...tc, arguments: fit.join('') });
    if (fit.length < pieces.length) {
      truncated = true;
      break;
    }
  }
  return {
    steps,
    finishReason: truncated ? 'length' : 'tool_calls',
    stopReason: null,
    content: null,
    toolCalls: kept,
    completionTokens: used,
  };
}

export function planChoices(req: ChatRequest, maxTokens: number): ChoicePlan[] {
  const key = promptKey(req);
  const plans: ChoicePlan[] = [];
  for (let index = 0; index < req.n; index++) {
    const calls = planToolCalls(req, key, index);
    if (calls.length > 0) {
      plans.push({ index, ...planTools(calls, maxTokens) });
      continue;
    }
    const generated = generateTokens(`${key}\u0004${hash53(req.model)}`, index, {
      maxTokens,
      minTokens: req.minTokens,
      ignoreEos: req.ignoreEos,
    });
    const { tokens, stopped, matched } = applyStop(generated.tokens, req.stop);
    const hitLimit = req.ignoreEos || generated.naturalLength > maxTokens;
    plans.push({
      index,
      steps: tokens.map((text) => ({ kind: 'content', text, tokens: 1 })),
      finishReason: !stopped && hitLimit ? 'length' : 'stop',
      stopReason: matched,
      content: tokens.join(''),
      toolCalls: [],
      completionTokens: tokens.length,
    });
  }
  return plans;
}
