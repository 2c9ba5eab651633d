// What a model's output limit and context length allow a call, decided by the proxy itself (a
// 400 naming the field, before any credit is held or any engine asked), as OpenAI and vLLM refuse
// it. Pure: the prompt's count comes in, from the engine's tokenizer when one answered (exact),
// else as a lower bound the proxy can prove from the text alone.
import type { CatalogueEntry } from '../../core/catalogue/index.ts';
import { invalidRequest } from '../../core/errors.ts';
import type { EmbeddingsRequest } from '../schemas/embeddings.ts';

/**
 * The most UTF-8 bytes one token covers, so that bytes / this is a lower bound of a text's tokens
 * where no tokenizer answers. The longest tokens of common vocabularies (runs of spaces or
 * punctuation, long words) are far shorter; a bound this loose refuses only the absurd.
 */
export const MAX_BYTES_PER_TOKEN = 256;

/** At least this many tokens, whatever the tokenizer. */
export function tokensAtLeast(textBytes: number): number {
  return Math.floor(textBytes / MAX_BYTES_PER_TOKEN);
}

/** A prompt's tokens: counted by the engine's tokenizer (exact), or a lower bound. */
export interface PromptCount {
  tokens: number;
  exact: boolean;
}

/**
 * The output tokens per choice a call runs with once its prompt is counted. A bound the caller
 * asked for (`askedField`) that does not fit beside the prompt is refused, naming that field; a
 * default bound is lowered to the room the context leaves (vLLM's own default). A prompt that
 * leaves no room at all is refused naming `messages`.
 */
export function outputThatFits(
  context: number,
  prompt: PromptCount,
  perChoice: number,
  askedField: string | null,
): number {
  const room = context - prompt.tokens;
  if (perChoice <= room) return perChoice;
  const counted = prompt.exact ? String(prompt.tokens) : `at least ${prompt.tokens}`;
  if (room < 1)
    throw invalidRequest(
      `This model's maximum context length is ${context} tokens, and the messages alone have ${counted} tokens. Please reduce the length of the messages.`,
      'messages',
    );
  if (askedField === null) return room;
  throw invalidRequest(
    `This model's maximum context length is ${context} tokens. However, you requested ${prompt.exact ? '' : 'at least '}${prompt.tokens + perChoice} tokens (${counted} in the messages, ${perChoice} in the completion). Please reduce the length of the messages or ${askedField}.`,
    askedField,
  );
}

/**
 * The UTF-8 bytes of a chat prompt's text (string contents and text parts): what a lower bound
 * of its tokens may count (the JSON around it is not text the model reads).
 */
export function promptTextBytes(messages: readonly { content?: unknown }[]): number {
  let bytes = 0;
  for (const m of messages) {
    if (typeof m.content === 'string') bytes += Buffer.byteLength(m.content);
    else if (Array.isArray(m.content))
      for (const part of m.content as { text?: unknown }[])
        if (typeof part?.text === 'string') bytes += Buffer.byteLength(part.text);
  }
  return bytes;
}

/**
 * Each embeddings input must fit the model's context: token ids are counted exactly; a text by
 * the lower bound of its tokens (the engine, which tokenizes it, refuses what is closer).
 */
export function checkEmbeddingInputs(entry: CatalogueEntry, input: EmbeddingsRequest['input']): void {
  const context = entry.contextLength;
  if (context === undefined) return;
  const single = typeof input === 'string' || typeof input[0] === 'number';
  const items = (single ? [input] : input) as (string | number[])[];
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const tokens = typeof item === 'string' ? tokensAtLeast(Buffer.byteLength(item)) : item.length;
    if (tokens <= context) continue;
    const counted = typeof item === 'string' ? `at least ${tokens}` : String(tokens);
    throw invalidRequest(
      `This model's maximum context length is ${context} tokens, and this input has ${counted} tokens. Please reduce the length of the input.`,
      single ? 'input' : `input[${i}]`,
    );
  }
}
