// What a text call (chat completions, embeddings) holds and costs — pure functions, no I/O. The
// hold must bound the cost: a prompt's tokens are at most its text's UTF-8 bytes (a token covers at
// least one byte of text), but an image part of ~60 bytes can be thousands of tokens on a vision
// model and a chat template adds tokens of its own, so both are counted from the catalogue's
// promptBounds. The charge is the true cost of what the engine reported, never capped at the hold
// (CallCharge charges any excess from the spare balance and records what it could not collect).
import { maxTokensCovered, textCostSaturating, textHold } from '../../core/billing/index.ts';
import type { CatalogueEntry, TokenPrice } from '../../core/catalogue/index.ts';
import { estimateTokens } from '../engine/frames/index.ts';
import type { TextUsage } from '../usage.ts';
import type { Quote } from './charge.ts';

/** Used where a Model sets no promptBounds (operator/README.md "promptBounds"). */
export const DEFAULT_PROMPT_BOUNDS = { perImage: 4096, perMessage: 8, perRequest: 64 } as const;

export function promptBoundsOf(entry: CatalogueEntry): {
  perImage: number;
  perMessage: number;
  perRequest: number;
} {
  const b = entry.promptBounds;
  return {
    perImage: b?.perImage ?? DEFAULT_PROMPT_BOUNDS.perImage,
    perMessage: b?.perMessage ?? DEFAULT_PROMPT_BOUNDS.perMessage,
    perRequest: b?.perRequest ?? DEFAULT_PROMPT_BOUNDS.perRequest,
  };
}

/**
 * An upper bound of a chat prompt's tokens: the bytes of its JSON (messages, and tools when given)
 * with the bytes of image URLs left out, plus each image's bound, the template's tokens around each
 * message and the reply's own header (one more message), and its tokens per request.
 */
export function chatPromptTokens(
  entry: CatalogueEntry,
  messages: readonly { content?: unknown }[],
  jsonBytes: number,
): number {
  const b = promptBoundsOf(entry);
  const { textBytes, images } = promptShape(messages, jsonBytes);
  return textBytes + images * b.perImage + (messages.length + 1) * b.perMessage + b.perRequest;
}

/**
 * The proxy's own count of a chat prompt where no engine tokenizer answers (Messages
 * count_tokens): about four bytes a token of text, and images and template at the model's bounds.
 */
export function estimatedPromptTokens(
  entry: CatalogueEntry,
  messages: readonly { content?: unknown }[],
  jsonBytes: number,
): number {
  const b = promptBoundsOf(entry);
  const { textBytes, images } = promptShape(messages, jsonBytes);
  return estimateTokens(textBytes) + images * b.perImage + (messages.length + 1) * b.perMessage;
}

/** A prompt's JSON bytes without its image URLs (counted apart), and its images. */
function promptShape(
  messages: readonly { content?: unknown }[],
  jsonBytes: number,
): { textBytes: number; images: number } {
  let bytes = jsonBytes;
  let images = 0;
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue; // plain text: nothing to look at (the usual case)
    for (const part of m.content as { type?: unknown; image_url?: { url?: unknown } }[]) {
      if (part?.type !== 'image_url') continue;
      images++;
      const url = part.image_url?.url;
      if (typeof url === 'string') bytes -= Buffer.byteLength(url);
    }
  }
  return { textBytes: Math.max(0, bytes), images };
}

/** Embeddings: the input's JSON bytes, and a begin and an end token around each input. */
export function embeddingPromptTokens(jsonBytes: number, inputs: number): number {
  return jsonBytes + 2 * inputs;
}

/**
 * The quote of a text call: min holds the prompt alone, max adds `outputTokens` of output; a hold
 * between them pays for the output tokens maxTokensCovered says.
 */
export function textQuote(price: TokenPrice, promptTokens: number, outputTokens: number): Quote {
  const hold = textHold(price, { promptTokens, maxOutputTokens: outputTokens });
  return {
    min: hold.min,
    max: hold.max,
    full: outputTokens,
    allowance: (held) => Math.min(outputTokens, maxTokensCovered(price, { held, promptTokens })),
    // A rate-limited key's token windows take the same counts the hold is made of (issue 34).
    tokens: { input: promptTokens, output: outputTokens },
  };
}

/**
 * What a text call is charged for the usage its engine reported. Usage an engine cannot honestly
 * report is not billed: output beyond the `allowedOutput` it was sent (max_tokens × n), input beyond
 * the model's context length (when the catalogue gives one). The cost saturates at 2^53 nano
 * instead of throwing, so absurd usage (10^12 tokens) cannot break a settlement that runs after the
 * answer was sent. `implausible` says the engine's numbers were cut (worth a warning).
 */
export function textBill(
  price: TokenPrice,
  reported: TextUsage,
  allowed: { output: number; input?: number | undefined },
): { cost: number; usage: TextUsage; implausible: boolean } {
  const input = Math.min(reported.inputTokens, allowed.input ?? Number.MAX_SAFE_INTEGER);
  const usage: TextUsage = {
    inputTokens: input,
    cachedTokens: Math.min(reported.cachedTokens, input),
    outputTokens: Math.min(reported.outputTokens, allowed.output),
  };
  if (reported.reasoningTokens !== undefined)
    usage.reasoningTokens = Math.min(reported.reasoningTokens, usage.outputTokens);
  const implausible =
    usage.inputTokens !== reported.inputTokens || usage.outputTokens !== reported.outputTokens;
  return { cost: textCostSaturating(price, usage), usage, implausible };
}
