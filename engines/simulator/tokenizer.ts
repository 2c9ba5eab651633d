// The simulator's tokenizer: one token per run of up to 4 non-whitespace characters (code points),
// with any whitespace before it attached to it; whitespace at the very end is not a token. Every
// token holds at least one character, so a text's token count never exceeds its UTF-8 byte count —
// the proxy reserves credits treating prompt bytes as an upper bound on prompt tokens.

import { hash53 } from './hash.ts';

const TOKEN = /\s*[^\s]{1,4}/gu;

export function tokenize(text: string): string[] {
  return text.match(TOKEN) ?? [];
}

export function countTokens(text: string): number {
  let n = 0;
  TOKEN.lastIndex = 0;
  while (TOKEN.exec(text) !== null) n++;
  return n;
}

/** Tokens' stand-in ids (/tokenize's `tokens`, the KV events' `token_ids`): a hash of the piece. */
export const VOCAB_SIZE = 151_936;

export function tokenId(piece: string): number {
  return hash53(piece) % VOCAB_SIZE;
}
