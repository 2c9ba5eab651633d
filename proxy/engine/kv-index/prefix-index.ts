// Which endpoints hold which prompt blocks, per model, from the engines' KV events: block key →
// the endpoints holding it (with each one's own hash for the block, which its BlockRemoved names).
// Bounded: past `maxBlocksPerModel` keys the least recently stored goes (an engine evicts what it
// has not used, so a key we forget is mostly one the engines forgot too). Pure bookkeeping: the
// ZMQ streams (./event-stream.ts) and the catalogue (./feed.ts) drive it.
import { blockKey, rootKey } from './block-keys.ts';
import type { EngineHash, KvEvent } from './wire.ts';

interface ModelBlocks {
  /** Insertion order = store recency, for the bound. */
  keys: Map<number, Map<string, EngineHash>>;
  /** Per endpoint, its hash of each block → our key. */
  endpoints: Map<string, Map<EngineHash, number>>;
  blockSize: number | null;
}

export interface IndexStats {
  blocks: number;
  /** Stored events skipped because their parent block was unknown (missed, or forgotten). */
  orphans: number;
}

export class PrefixIndex {
  private readonly models = new Map<string, ModelBlocks>();
  orphans = 0;

  constructor(private readonly options: { maxBlocksPerModel: number }) {}

  apply(model: string, endpoint: string, events: readonly KvEvent[]): void {
    const m = this.model(model);
    for (const e of events) {
      if (e.type === 'BlockStored') this.store(m, endpoint, e);
      else if (e.type === 'BlockRemoved') {
        const mine = m.endpoints.get(endpoint);
        for (const h of e.hashes) {
          const key = mine?.get(h);
          if (key === undefined) continue;
          mine!.delete(h);
          this.unhold(m, key, endpoint);
        }
      } else this.dropEndpoint(model, endpoint);
    }
  }

  /** Forgets everything `endpoint` held: it left, cleared its cache, or its stream must resync. */
  dropEndpoint(model: string, endpoint: string): void {
    const m = this.models.get(model);
    const mine = m?.endpoints.get(endpoint);
    if (!m || !mine) return;
    for (const key of mine.values()) this.unhold(m, key, endpoint);
    m.endpoints.delete(endpoint);
  }

  /** The engines' block size for `model`, once an event told it. */
  blockSize(model: string): number | null {
    return this.models.get(model)?.blockSize ?? null;
  }

  /** For each endpoint holding the first block: how many leading blocks of `keys` it holds. */
  match(model: string, keys: readonly number[]): Map<string, number> {
    const out = new Map<string, number>();
    const m = this.models.get(model);
    if (!m || keys.length === 0) return out;
    let live = [...(m.keys.get(keys[0]!)?.keys() ?? [])];
    for (const url of live) out.set(url, 1);
    for (let i = 1; i < keys.length && live.length > 0; i++) {
      const holders = m.keys.get(keys[i]!);
      live = holders ? live.filter((url) => holders.has(url)) : [];
      for (const url of live) out.set(url, i + 1);
    }
    return out;
  }

  stats(model: string): IndexStats {
    return { blocks: this.models.get(model)?.keys.size ?? 0, orphans: this.orphans };
  }

  private model(model: string): ModelBlocks {
    let m = this.models.get(model);
    if (!m) {
      m = { keys: new Map(), endpoints: new Map(), blockSize: null };
      this.models.set(model, m);
    }
    return m;
  }

  private store(m: ModelBlocks, endpoint: string, e: Extract<KvEvent, { type: 'BlockStored' }>): void {
    let mine = m.endpoints.get(endpoint);
    if (!mine) {
      mine = new Map();
      m.endpoints.set(endpoint, mine);
    }
    let parent = e.parent === null ? rootKey(e.lora) : mine.get(e.parent);
    // Without the parent's key the chain cannot be recomputed: these blocks stay unknown (a request
    // for them misses the index, never mispredicts).
    if (parent === undefined || !(e.blockSize > 0)) {
      this.orphans++;
      return;
    }
    m.blockSize = e.blockSize;
    for (const [i, h] of e.hashes.entries()) {
      const from = i * e.blockSize;
      if (from + e.blockSize > e.tokenIds.length) break;
      parent = blockKey(parent, e.tokenIds, from, from + e.blockSize);
      const holders = m.keys.get(parent) ?? new Map<string, EngineHash>();
      m.keys.delete(parent); // re-inserted: most recently stored
      holders.set(endpoint, h);
      m.keys.set(parent, holders);
      mine.set(h, parent);
    }
    while (m.keys.size > this.options.maxBlocksPerModel) {
      const [oldest, holders] = m.keys.entries().next().value!;
      m.keys.delete(oldest);
      for (const [url, h] of holders) m.endpoints.get(url)?.delete(h);
    }
  }

  private unhold(m: ModelBlocks, key: number, endpoint: string): void {
    const holders = m.keys.get(key);
    if (!holders) return;
    holders.delete(endpoint);
    if (holders.size === 0) m.keys.delete(key);
  }
}
