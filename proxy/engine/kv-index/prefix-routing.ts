// The proxy's side of prefix-cache routing: the index and its event feed, the models' tokenizers,
// and, per request, the score the picker minimises (./score.ts). It answers "no opinion"
// (undefined) whenever it cannot see better than the picker's default — the model names no
// tokenizer, its engines publish no events (llama.cpp: then character hashing, if configured, or
// least-loaded), its tokenizer is still loading, or no endpoint holds even the prompt's first
// block — so a request is never held back waiting for routing.
import { type CatalogueEntry, catalogueKey } from '../../../core/catalogue/index.ts';
import { promptBlockKeys } from './block-keys.ts';
import { type FeedLog, KvEventFeed } from './feed.ts';
import { PrefixIndex } from './prefix-index.ts';
import { type ChatPrompt, loadPromptTokenizer, type PromptTokenizer } from './prompt-tokens.ts';
import { cachedTokens, expectedTtftMs, type RoutingWeights } from './score.ts';

/** Lower is better: the expected time to first token on `url` with `inFlight` requests there. */
export type EndpointScore = (url: string, inFlight: number) => number;

export interface Prediction {
  promptTokens: number;
  /** Cached prompt tokens each endpoint holding a prefix would report. */
  cached: Map<string, number>;
}

export class PrefixRouting {
  readonly index: PrefixIndex;
  readonly feed: KvEventFeed;
  private readonly tokenizers = new Map<string, PromptTokenizer | 'loading' | 'failed'>();
  /** Time spent tokenizing and matching, and the requests it was spent on (bench, metrics). */
  readonly cost = { ms: 0, requests: 0 };

  constructor(private readonly o: { weights: RoutingWeights; maxBlocksPerModel: number; log: FeedLog }) {
    this.index = new PrefixIndex({ maxBlocksPerModel: o.maxBlocksPerModel });
    this.feed = new KvEventFeed(this.index, o.log);
  }

  private unfollow: (() => void) | undefined;

  /** Keeps the subscriptions in step with the catalogue until close(). */
  follow(catalogue: { all(): CatalogueEntry[]; onChange(listener: () => void): () => void }): void {
    this.sync(catalogue.all());
    this.unfollow = catalogue.onChange(() => this.sync(catalogue.all()));
  }

  sync(entries: readonly CatalogueEntry[]): void {
    this.feed.sync(entries);
    for (const e of entries) if (e.tokenizer) this.tokenizer(e.tokenizer);
  }

  close(): void {
    this.unfollow?.();
    this.feed.close();
  }

  predict(entry: CatalogueEntry, prompt: ChatPrompt): Prediction | undefined {
    const model = catalogueKey(entry.id);
    const blockSize = this.index.blockSize(model);
    const tokenize = entry.tokenizer === undefined ? undefined : this.tokenizer(entry.tokenizer);
    if (blockSize === null || tokenize === undefined) return undefined;
    const started = performance.now();
    const ids = tokenize(prompt);
    const matched = this.index.match(model, promptBlockKeys(ids, blockSize));
    this.cost.ms += performance.now() - started;
    this.cost.requests++;
    const cached = new Map<string, number>();
    for (const [url, blocks] of matched) cached.set(url, cachedTokens(blocks, blockSize, ids.length));
    return { promptTokens: ids.length, cached };
  }

  scorer(entry: CatalogueEntry, prompt: ChatPrompt): EndpointScore | undefined {
    const p = this.predict(entry, prompt);
    if (p === undefined || p.cached.size === 0) return undefined;
    const w = this.o.weights;
    return (url, inFlight) => expectedTtftMs(p.promptTokens, p.cached.get(url) ?? 0, inFlight, w);
  }

  /** The model's tokenizer once loaded; loading starts on first ask and never blocks a request. */
  private tokenizer(spec: string): PromptTokenizer | undefined {
    const t = this.tokenizers.get(spec);
    if (typeof t === 'function') return t;
    if (t === undefined) {
      this.tokenizers.set(spec, 'loading');
      loadPromptTokenizer(spec).then(
        (fn) => this.tokenizers.set(spec, fn),
        (err: unknown) => {
          this.tokenizers.set(spec, 'failed');
          this.o.log.warn({ err, tokenizer: spec }, 'tokenizer failed to load: no prefix routing for it');
        },
      );
    }
    return undefined;
  }
}
