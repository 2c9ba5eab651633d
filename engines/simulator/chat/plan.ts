// What each choice of a chat completion will emit, token by token, decided up front so streaming and
// non-streaming responses carry exactly the same output and usage.

import { hash53, seededRandom } from '../hash.ts';
import { applyStop, generateTokens } from '../text-generator.ts';
import { countTokens, tokenize } from '../tokenizer.ts';
import type { ChatRequest } from './request.ts';
import { type PlannedToolCall, planToolCalls, sampleFromSchema } from './tools.ts';

export type FinishReason = 'stop' | 'length' | 'tool_calls';

/** One decode step: one streamed delta. A tool call's name is one step worth `tokens` tokens. */
export type Step =
  | { kind: 'reasoning'; text: string; tokens: number }
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
  /** vLLM 0.32's `reasoning` (a thinking model's reasoning), or null. */
  reasoning: string | null;
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

/**
 * A choice that calls tools. A call the request forced (a named tool_choice) finishes `stop` with
 * content "" — as vLLM 0.32 answers it (recorded) and as OpenAI's API does; a call the model chose
 * finishes `tool_calls` with content null.
 */
function planTools(calls: PlannedToolCall[], budget: number, forced: boolean): Omit<ChoicePlan, 'index'> {
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
    finishReason: truncated ? 'length' : forced ? 'stop' : 'tool_calls',
    stopReason: null,
    content: forced ? '' : null,
    reasoning: null,
    toolCalls: kept,
    completionTokens: used,
  };
}

/**
 * The text of one choice: what the "model" says to the prompt. With continue_final_message the
 * final assistant message is a prefill: when it is the start of what the model would have said to
 * the prompt before it, the reply is the rest of that (cut mid-token where the prefill ends
 * mid-token); any other prefill is continued with text of its own.
 */
function generateText(
  req: ChatRequest,
  key: string,
  index: number,
  maxTokens: number,
): { tokens: string[]; hitLimit: boolean } {
  const limits = { maxTokens, minTokens: req.minTokens, ignoreEos: req.ignoreEos };
  const seed = (k: string) => `${k}\u0004${hash53(req.model)}`;
  if (req.continueFinalMessage) {
    const prefill = req.messages.at(-1)!.text;
    const before = promptKey({ ...req, messages: req.messages.slice(0, -1) });
    // Enough tokens for the prefill and the continuation's limit (a token is one character or more).
    const whole = generateTokens(seed(before), index, { ...limits, maxTokens: maxTokens + prefill.length });
    const rest = continuation(whole.tokens, prefill);
    if (rest !== null) {
      const cut = whole.naturalLength > whole.tokens.length;
      return { tokens: rest.slice(0, maxTokens), hitLimit: req.ignoreEos || cut || rest.length > maxTokens };
    }
  }
  if (req.jsonSchema !== null) {
    // Structured output: JSON made from the schema (deterministic per prompt), cut at the limit.
    const json = JSON.stringify(
      sampleFromSchema(req.jsonSchema, seededRandom(hash53(seed(key), index)), 0) ?? {},
    );
    const tokens = tokenize(json);
    return { tokens: tokens.slice(0, maxTokens), hitLimit: tokens.length > maxTokens };
  }
  const generated = generateTokens(seed(key), index, limits);
  return { tokens: generated.tokens, hitLimit: req.ignoreEos || generated.naturalLength > maxTokens };
}

/** The tokens after `prefix` when the tokens' text starts with it (the first possibly cut), else null. */
export function continuation(tokens: string[], prefix: string): string[] | null {
  if (!tokens.join('').startsWith(prefix)) return null;
  let used = 0;
  for (const [i, t] of tokens.entries()) {
    if (used + t.length > prefix.length) {
      const rest = t.slice(prefix.length - used);
      return [rest, ...tokens.slice(i + 1)];
    }
    used += t.length;
  }
  return [];
}

/**
 * A thinking model's reasoning: a few words before the answer, at most half the budget, so the
 * answer still has room. Empty when the model does not think.
 */
function planReasoning(req: ChatRequest, key: string, index: number, maxTokens: number): string[] {
  if (!req.thinks || maxTokens < 2) return [];
  const limit = Math.min(12, Math.floor(maxTokens / 2));
  return generateTokens(`think\u0005${key}`, index, { maxTokens: limit, minTokens: limit, ignoreEos: false })
    .tokens;
}

/** The plan with its reasoning before it (reasoning tokens count as output, as vLLM counts them). */
function withReasoning(plan: ChoicePlan, reasoning: string[]): ChoicePlan {
  if (reasoning.length === 0) return plan;
  return {
    ...plan,
    steps: [...reasoning.map((text) => ({ kind: 'reasoning' as const, text, tokens: 1 })), ...plan.steps],
    reasoning: reasoning.join(''),
    completionTokens: plan.completionTokens + reasoning.length,
  };
}

export function planChoices(req: ChatRequest, maxTokens: number): ChoicePlan[] {
  const key = promptKey(req);
  const plans: ChoicePlan[] = [];
  for (let index = 0; index < req.n; index++) {
    const reasoning = planReasoning(req, key, index, maxTokens);
    const plan = planChoice(req, key, index, maxTokens - reasoning.length);
    plans.push(withReasoning(plan, reasoning));
  }
  return plans;
}

function planChoice(req: ChatRequest, key: string, index: number, maxTokens: number): ChoicePlan {
  const calls = planToolCalls(req, key, index);
  if (calls.length > 0) return { index, ...planTools(calls, maxTokens, typeof req.toolChoice === 'object') };
  const generated = generateText(req, key, index, maxTokens);
  const { tokens, stopped, matched } = applyStop(generated.tokens, req.stop);
  const hitLimit = generated.hitLimit;
  return {
    index,
    steps: tokens.map((text) => ({ kind: 'content', text, tokens: 1 })),
    finishReason: !stopped && hitLimit ? 'length' : 'stop',
    stopReason: matched,
    content: tokens.join(''),
    reasoning: null,
    toolCalls: [],
    completionTokens: tokens.length,
  };
}
