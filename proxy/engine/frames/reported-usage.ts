// A call's usage as its engine reported it — the usage object of an answer or of a stream's frame,
// OpenAI's shape whatever the engine (vLLM, SGLang, llama.cpp, the simulator) — or, where the
// engine reported none, the proxy's own count in its stead. What is billed of it, and at what
// price, is billing's (../../billing/text-quote.ts textBill); the cached part of a cut stream is
// ./cached-tokens.ts.
import type { TextUsage } from '../../usage.ts';
import { valueEnd } from './members.ts';

/** OpenAI-style usage → billable token counts; cached is a subset of input (BILL-2). */
export function usageFromEngine(u: unknown): TextUsage | null {
  if (typeof u !== 'object' || u === null) return null;
  const o = u as Record<string, unknown>;
  const input = count(o.prompt_tokens);
  if (input === null) return null;
  const details = o.prompt_tokens_details as Record<string, unknown> | null | undefined;
  const cached = Math.min(count(details?.cached_tokens) ?? 0, input);
  const usage: TextUsage = {
    inputTokens: input,
    cachedTokens: cached,
    outputTokens: count(o.completion_tokens) ?? 0,
  };
  const outputDetails = o.completion_tokens_details as Record<string, unknown> | null | undefined;
  const reasoning = count(outputDetails?.reasoning_tokens);
  if (reasoning !== null) usage.reasoningTokens = Math.min(reasoning, usage.outputTokens);
  return usage;
}

/**
 * The usage object of a frame read from its bytes (the engine's running count with continuous
 * usage stats): parsed once, for the stream's last such frame, not for every frame. `end` is just
 * after the usage object; by default it is found by stepping over the object (usage need not be the
 * frame's last field: llama.cpp's `timings` follow it). Undefined when the bytes are not JSON.
 */
export function usageIn(block: Buffer, usageAt: number, end?: number): object | undefined {
  const close = end ?? valueEnd(block, usageAt, block.length - 3);
  if (close === -1) return undefined;
  try {
    const usage: unknown = JSON.parse(block.toString('utf8', usageAt, close));
    return typeof usage === 'object' && usage !== null && !Array.isArray(usage) ? usage : undefined;
  } catch {
    return undefined;
  }
}

/** True for a parsed chunk that carries generated content (counts output when an engine reports no usage). */
export function hasContent(chunk: Record<string, unknown>): boolean {
  const choices = chunk.choices;
  if (!Array.isArray(choices)) return false;
  return choices.some((c) => {
    const d = (c as { delta?: { content?: unknown; tool_calls?: unknown } } | null)?.delta;
    return (typeof d?.content === 'string' && d.content.length > 0) || d?.tool_calls != null;
  });
}

/**
 * True for a parsed chunk that carries any generated token: content, a tool call, or reasoning
 * (vLLM's `reasoning`, earlier `reasoning_content`). An engine's first frame is often an empty role
 * frame, sent before prefill ends: the time to first token is the first frame this is true of.
 */
export function hasOutput(chunk: Record<string, unknown>): boolean {
  if (hasContent(chunk)) return true;
  const choices = chunk.choices;
  if (!Array.isArray(choices)) return false;
  return choices.some((c) => {
    const d = (c as { delta?: { reasoning?: unknown; reasoning_content?: unknown } } | null)?.delta;
    return (
      (typeof d?.reasoning === 'string' && d.reasoning.length > 0) ||
      (typeof d?.reasoning_content === 'string' && d.reasoning_content.length > 0)
    );
  });
}

/**
 * The proxy's own count where an engine reports no usage: about four UTF-8 bytes per token (the
 * prompt's bound bytes for input; the generated text for output).
 */
export function estimateTokens(bytes: number): number {
  return Math.ceil(bytes / 4);
}

export function estimatedUsage(promptBytes: number, outputTokens: number): TextUsage {
  return { inputTokens: estimateTokens(promptBytes), cachedTokens: 0, outputTokens };
}

function count(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null;
}
