// Our own key for a block of tokens, chained over every block before it — computed the same way
// from an engine's BlockStored token ids and from a request's tokens, so the index never depends on
// the engine's hash function or seed (vLLM's sha256/PYTHONHASHSEED choice), as llm-d's indexer does.
// 53 bits (two 32-bit lanes, cyrb53's mixing): a JS number, collisions negligible at index sizes.

/** The chain's root: the base model's blocks, or a LoRA adapter's (never matching the base). */
export function rootKey(lora: string | null): number {
  if (lora === null) return 0;
  const codes = Array.from(Buffer.from(lora, 'utf8'));
  return blockKey(1, codes, 0, codes.length);
}

/** `tokens` may be a string: its UTF-16 units are hashed (the simulator's token ids are so made). */
export function blockKey(
  parent: number,
  tokens: ArrayLike<number> | string,
  from: number,
  to: number,
): number {
  let h1 = 0xdeadbeef ^ (parent >>> 0);
  let h2 = 0x41c6ce57 ^ Math.floor(parent / 4294967296);
  const text = typeof tokens === 'string' ? tokens : null;
  for (let i = from; i < to; i++) {
    const t = text === null ? (tokens as ArrayLike<number>)[i]! : text.charCodeAt(i);
    h1 = Math.imul(h1 ^ t, 2654435761);
    h2 = Math.imul(h2 ^ t, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/** The keys of a prompt's full blocks, in order (a partial last block is never cached). */
export function promptBlockKeys(tokens: ArrayLike<number>, blockSize: number): number[] {
  const keys: number[] = [];
  let parent = rootKey(null);
  for (let from = 0; from + blockSize <= tokens.length; from += blockSize) {
    parent = blockKey(parent, tokens, from, from + blockSize);
    keys.push(parent);
  }
  return keys;
}
