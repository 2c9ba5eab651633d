// Simulated automatic prefix caching, as in vLLM: the prompt's tokens are cut into full blocks, each
// block is identified by a hash chained over all blocks before it, and a per-model LRU remembers
// recently seen blocks. A request's cached tokens are its leading blocks already in the LRU — never
// the whole prompt, because the last token is always computed (vLLM does the same). Each change is
// told to `onEvents` as vLLM's KV events (./kv-events.ts): the blocks stored, in prompt order with
// their token ids and parent, and the blocks the LRU evicted.

import { hash53 } from './hash.ts';
import type { KvEvent } from './kv-events.ts';
import { tokenId } from './tokenizer.ts';

export class PrefixCache {
  private readonly byModel = new Map<string, Map<number, true>>();

  constructor(
    private readonly settings: () => { blockSize: number; capacityBlocks: number },
    private readonly onEvents: (model: string, events: KvEvent[]) => void = () => {},
  ) {}

  /**
   * Looks up the prompt's blocks, then records them: the prompt tokens found cached, and those it
   * added to the cache (vLLM's created_cache_tokens: its full blocks that were not there yet).
   */
  lookupAndInsert(model: string, tokens: readonly string[]): { cached: number; created: number } {
    const { blockSize, capacityBlocks } = this.settings();
    let lru = this.byModel.get(model);
    if (!lru) {
      lru = new Map();
      this.byModel.set(model, lru);
    }
    const fullBlocks = Math.floor(tokens.length / blockSize);
    const hashes: number[] = [];
    let previous = 0;
    for (let b = 0; b < fullBlocks; b++) {
      const block = tokens.slice(b * blockSize, (b + 1) * blockSize).join('\u0000');
      previous = hash53(block, previous % 0xffffffff);
      hashes.push(previous);
    }
    let hits = 0;
    while (hits < hashes.length && lru.has(hashes[hits]!)) hits++;
    const fresh = hashes.filter((h) => !lru.has(h)).length;
    const maxCachedBlocks = Math.floor(Math.max(0, tokens.length - 1) / blockSize);
    const events: KvEvent[] = [];
    for (const [b, h] of hashes.entries()) {
      if (!lru.has(h)) events.push(storedBlock(tokens, b, blockSize, b === 0 ? null : hashes[b - 1]!, h));
      lru.delete(h); // re-insert to mark as most recently used
      lru.set(h, true);
    }
    const evicted: number[] = [];
    while (lru.size > capacityBlocks) {
      const oldest = lru.keys().next().value;
      if (oldest === undefined) break;
      lru.delete(oldest);
      evicted.push(oldest);
    }
    if (evicted.length > 0) events.push({ type: 'BlockRemoved', block_hashes: evicted });
    if (events.length > 0) this.onEvents(model, events);
    return { cached: Math.min(hits, maxCachedBlocks) * blockSize, created: fresh * blockSize };
  }

  reset(): void {
    for (const model of this.byModel.keys()) this.onEvents(model, [{ type: 'AllBlocksCleared' }]);
    this.byModel.clear();
  }
}

/** One stored block as vLLM reports it (one event a block: each names its own parent). */
function storedBlock(
  tokens: readonly string[],
  b: number,
  blockSize: number,
  parent: number | null,
  hash: number,
): KvEvent {
  return {
    type: 'BlockStored',
    block_hashes: [hash],
    parent_block_hash: parent,
    token_ids: tokens.slice(b * blockSize, (b + 1) * blockSize).map(tokenId),
    block_size: blockSize,
  };
}
