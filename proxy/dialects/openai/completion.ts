// The client's body for a non-streaming chat completion: the engine's answer as the client gets
// it (../../engine/frames/answer.ts) with the call's cost put into its usage, and the output it
// generated, for the proxy's own count when the engine reports no usage.
import type { CompletionOut } from '../../engine/frames/index.ts';
import type { CallCost, TextUsage } from '../../usage.ts';

/**
 * The body with `usage.cost` and `usage.currency` (../../usage.ts CallCost): spliced into the
 * fast path's bytes before the usage object's closing brace, else set on the parsed answer (with
 * the billed token counts when the engine sent no usage).
 */
export function withCost(out: CompletionOut, cost: CallCost, billed: TextUsage): Buffer | string {
  const { body, usageClose } = out;
  if (usageClose !== undefined && Buffer.isBuffer(body)) {
    const fields = `"cost":${JSON.stringify(cost.cost)},"currency":${JSON.stringify(cost.currency)}`;
    const sep = body[usageClose - 1] === 123 ? '' : ','; // an empty usage object: no comma
    return Buffer.concat([
      body.subarray(0, usageClose),
      Buffer.from(sep + fields),
      body.subarray(usageClose),
    ]);
  }
  const o = JSON.parse(typeof body === 'string' ? body : body.toString('utf8')) as Record<string, unknown>;
  const usage =
    typeof o.usage === 'object' && o.usage !== null
      ? o.usage
      : {
          prompt_tokens: billed.inputTokens,
          completion_tokens: billed.outputTokens,
          total_tokens: billed.inputTokens + billed.outputTokens,
        };
  o.usage = { ...usage, cost: cost.cost, currency: cost.currency };
  return JSON.stringify(o);
}

/**
 * The UTF-8 bytes a completion generated (every choice's content and tool-call arguments), for the
 * proxy's own token count when an engine reports no usage (an unreadable body counts as none).
 */
export function completionOutputBytes(body: Buffer | string): number {
  let json: unknown;
  try {
    json = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch {
    return 0;
  }
  return outputBytesOf(json as ChatCompletionLike);
}

interface ChatCompletionLike {
  choices?: {
    message?: { content?: unknown; tool_calls?: { function?: { name?: unknown; arguments?: unknown } }[] };
  }[];
}

/** completionOutputBytes of a completion already parsed. */
export function outputBytesOf(json: ChatCompletionLike | null): number {
  let bytes = 0;
  const text = (v: unknown) => {
    if (typeof v === 'string') bytes += Buffer.byteLength(v);
  };
  for (const c of Array.isArray(json?.choices) ? json.choices : []) {
    text(c?.message?.content);
    for (const t of Array.isArray(c?.message?.tool_calls) ? c.message.tool_calls : []) {
      text(t?.function?.name);
      text(t?.function?.arguments);
    }
  }
  return bytes;
}
