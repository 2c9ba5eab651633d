// The proxy's side of prefix-cache routing: the index and its event feed, the models' tokenizers,
// and, per request, the score the picker minimises (./score.ts). It answers "no opinion"
// (undefined) whenever it cannot see better than the picker's default — the model names no
// tokenizer, its engines publish no events (llama.cpp: then character hashing, if configured, or
// least-loaded), or its tokenizer is still loading — so a request is never held back waiting for
// routing. When no endpoint holds even the prompt's first block, the score is the load term alone
// if the engines' own reports are fresh (least-loaded by what every replica sent), else no opinion.
import { type CatalogueEntry, catalogueKey } from '../../../core/catalogue/index.ts';
import { promptBlockKeys } from './block-keys.ts';
import { EngineMetrics } from './engine-metrics.ts';
import { type FeedLog, KvEventFeed } from './feed.ts';
import { PrefixIndex } from './prefix-index.ts';
import { type ChatPrompt, loadPromptTokenizer, type PromptTokenizer } from './prompt-tokens.ts';
import { cachedTokens, expectedTtftMs, type RoutingWeights } from './score.ts';
import type { HubAccess } from './tokenizer-files.ts';

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

  /** The engines' own load from /metrics; absent when scraping is off (metrics.intervalMs 0). */
  readonly engines: EngineMetrics | undefined;

  constructor(
    private readonly o: {
      weights: RoutingWeights;
      maxBlocksPerModel: number;
      log: FeedLog;
      /** Where `hf:` tokenizers come from (./tokenizer-files.ts); default the public hub. */
      hub?: HubAccess;
      /** Scrape the engines' /metrics every intervalMs (0: never), trusting a report for staleMs. */
      metrics?: { intervalMs: number; staleMs: number; inFlight: (url: string) => number };
    },
  ) {
    this.index = new PrefixIndex({ maxBlocksPerModel: o.maxBlocksPerModel });
    this.feed = new KvEventFeed(this.index, o.log);
    const m = o.metrics;
    this.engines = m && m.intervalMs > 0 ? new EngineMetrics(m) : undefined;
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
    // The endpoints the score may rank: a chat model's that publish events, its tokenizer named.
    this.engines?.sync(
      entries.flatMap((e) =>
        e.kind === 'chat' && e.tokenizer ? e.endpoints.filter((x) => x.kvEvents).map((x) => x.url) : [],
      ),
    );
  }

  close(): void {
    this.unfollow?.();
    this.feed.close();
    this.engines?.close();
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
    if (p === undefined) return undefined;
    const engines = this.engines;
    const now = performance.now();
    if (p.cached.size === 0 && !entry.endpoints.some((e) => engines?.report(e.url, now))) return undefined;
    const w = this.o.weights;
    return (url, inFlight) =>
      expectedTtftMs(p.promptTokens, p.cached.get(url) ?? 0, inFlight, w, engines?.report(url, now));
  }

  /** The model's tokenizer once loaded; loading starts on first ask and never blocks a request. */
  private tokenizer(spec: string): PromptTokenizer | undefined {
    const t = this.tokenizers.get(spec);
    if (typeof t === 'function') return t;
    if (t === undefined) {
      this.tokenizers.set(spec, 'loading');
      loadPromptTokenizer(spec, this.o.hub).then(
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
