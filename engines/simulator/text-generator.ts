// Deterministic "model output": a sequence of tokens chosen by hashing the prompt, so the same
// request always produces the same text and tests can compare it. Each word is at most 4 characters,
// so with the leading space every output token is exactly one token of our tokenizer.

import { hash53, seededRandom } from './hash.ts';

const WORDS = (
  'the sim says this is not a real mock text gpu node fast data blue red gold mint sky sea sun moon star ' +
  'tree leaf rock sand wind rain snow fire ice map key log code test safe calm warm cold new old big tiny ' +
  'open path road city town home door lamp book page line word note song tune bell ring wave glow'
).split(' ');

export interface GeneratedText {
  /** Output tokens in order; joined they form the text. */
  tokens: string[];
  /** Tokens the "model" would produce before stopping on its own (end of sequence). */
  naturalLength: number;
}

/**
 * The output for one choice. Natural length is 16..64 tokens derived from the prompt; `ignoreEos`
 * (vLLM) makes the sequence run to `maxTokens` instead, and `minTokens` (vLLM) extends it.
 */
export function generateTokens(
  promptKey: string,
  choice: number,
  limits: { maxTokens: number; minTokens: number; ignoreEos: boolean },
): GeneratedText {
  const random = seededRandom(hash53(promptKey, choice + 1));
  const natural = limits.ignoreEos
    ? limits.maxTokens
    : Math.max(limits.minTokens, 16 + Math.floor(random() * 49));
  const length = Math.min(natural, limits.maxTokens);
  const tokens: string[] = [];
  for (let i = 0; i < length; i++) {
    const word = WORDS[Math.floor(random() * WORDS.length)]!;
    tokens.push(i === 0 ? word[0]!.toUpperCase() + word.slice(1) : ` ${word}`);
  }
  if (length > 1 && natural === length && !limits.ignoreEos) tokens[length - 1] = '.';
  return { tokens, naturalLength: natural };
}

/**
 * Applies OpenAI `stop` sequences: the output ends before the earliest occurrence, which is not
 * included. Returns the kept tokens (the last one possibly shortened), whether a stop matched and
 * which (vLLM reports it as the choice's `stop_reason`).
 */
export function applyStop(
  tokens: string[],
  stop: string[],
): { tokens: string[]; stopped: boolean; matched: string | null } {
  if (stop.length === 0) return { tokens, stopped: false, matched: null };
  const text = tokens.join('');
  let cut = -1;
  let matched: string | null = null;
  for (const s of stop) {
    const at = s === '' ? -1 : text.indexOf(s);
    if (at >= 0 && (cut < 0 || at < cut)) {
      cut = at;
      matched = s;
    }
  }
  if (cut < 0) return { tokens, stopped: false, matched: null };
  const kept: string[] = [];
  let used = 0;
  for (const t of tokens) {
    if (used >= cut) break;
    const piece = t.slice(0, cut - used);
    kept.push(piece);
    used += piece.length;
  }
  return { tokens: kept, stopped: true, matched };
}
