// The proxy's side of prefix-cache routing: the index and its event feed, the models' tokenizers,
// and, per request, the score the picker minimises (./score.ts). It answers "no opinion"
// (undefined) whenever it cannot see better than the picker's default — the model names no
// tokenizer, its engines publish no events (llama.cpp: then character hashing, if configured, or
// least-loaded), or its tokenizer is still loading, or the tokenizer threads (./tokenizer-pool.ts)
// are full or late — so a request is never held back waiting for routing. When no endpoint holds even the prompt's first block, the score is the load term alone
// if the engines' own reports are fresh (least-loaded by what every replica sent), else no opinion.
import { type CatalogueEntry, catalogueKey } from '../../../core/catalogue/index.ts';
import { promptBlockKeys } from './block-keys.ts';
import { EngineMetrics } from './engine-metrics.ts';
import { type FeedLog, KvEventFeed } from './feed.ts';
import { PrefixIndex } from './prefix-index.ts';
import type { ChatPrompt } from './prompt-tokens.ts';
import { cachedTokens, expectedTtftMs, type RoutingWeights } from './score.ts';
import type { HubAccess } from './tokenizer-files.ts';
import { sessionKey, TokenizerPool } from './tokenizer-pool.ts';

/** The tokenizer threads' knobs (PROXY_ROUTING_TOKENIZE_*; core/config/routing.ts has the defaults). */
export interface TokenizeOptions {
  threads: number;
  queue: number;
  budgetMs: number;
  cacheTokens: number;
}

const TOKENIZE_DEFAULTS: TokenizeOptions = { threads: 2, queue: 64, budgetMs: 50, cacheTokens: 2_000_000 };

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
  private readonly tokenizers = new Map<string, 'loading' | 'ready' | 'failed'>();
  private pool: TokenizerPool | undefined;
  /**
   * Per request predicted: the event loop's own time (serializing the prompt, block keys, the
   * match) and the wait for the ids from a thread; both in ms (bench, docs).
   */
  readonly cost = { loopMs: 0, waitMs: 0, requests: 0 };

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
      tokenize?: Partial<TokenizeOptions>;
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
    for (const e of entries) if (e.tokenizer) this.ready(e.tokenizer);
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
    void this.pool?.close();
  }

  /** The tokenizer threads, once a model names a tokenizer (tests, bench). */
  threads(): TokenizerPool | undefined {
    return this.pool;
  }

  /**
   * What each endpoint would report cached for this prompt. `messagesJson` is the prompt's
   * messages already serialized (the call has them: no second serialization on the event loop).
   */
  async predict(
    entry: CatalogueEntry,
    prompt: ChatPrompt,
    messagesJson?: string,
  ): Promise<Prediction | undefined> {
    const model = catalogueKey(entry.id);
    const spec = entry.tokenizer;
    if (this.index.blockSize(model) === null || spec === undefined || !this.ready(spec)) return undefined;
    const asked = performance.now();
    const tools = prompt.tools === undefined ? '' : `,"tools":${JSON.stringify(prompt.tools)}`;
    const json = `{"messages":${messagesJson ?? JSON.stringify(prompt.messages)}${tools}}`;
    const sent = performance.now();
    const ids = await this.pool?.tokenize(spec, json, sessionKey(prompt));
    const answered = performance.now();
    // The index may have lost the model's blocks while the ids were on their way.
    const blockSize = this.index.blockSize(model);
    if (ids === undefined || blockSize === null) return undefined;
    const matched = this.index.match(model, promptBlockKeys(ids, blockSize));
    this.cost.loopMs += sent - asked + (performance.now() - answered);
    this.cost.waitMs += answered - sent;
    this.cost.requests++;
    const cached = new Map<string, number>();
    for (const [url, blocks] of matched) cached.set(url, cachedTokens(blocks, blockSize, ids.length));
    return { promptTokens: ids.length, cached };
  }

  async scorer(
    entry: CatalogueEntry,
    prompt: ChatPrompt,
    messagesJson?: string,
  ): Promise<EndpointScore | undefined> {
    const p = await this.predict(entry, prompt, messagesJson);
    if (p === undefined) return undefined;
    const engines = this.engines;
    const now = performance.now();
    if (p.cached.size === 0 && !entry.endpoints.some((e) => engines?.report(e.url, now))) return undefined;
    const w = this.o.weights;
    return (url, inFlight) =>
      expectedTtftMs(p.promptTokens, p.cached.get(url) ?? 0, inFlight, w, engines?.report(url, now));
  }

  /** Whether the model's tokenizer is loaded in the threads; loading starts on first ask. */
  private ready(spec: string): boolean {
    const t = this.tokenizers.get(spec);
    if (t !== undefined) return t === 'ready';
    this.tokenizers.set(spec, 'loading');
    this.pool ??= new TokenizerPool({
      ...TOKENIZE_DEFAULTS,
      ...this.o.tokenize,
      size: this.o.tokenize?.threads ?? TOKENIZE_DEFAULTS.threads,
      hub: this.o.hub ?? { url: 'https://huggingface.co' },
      log: this.o.log,
    });
    this.pool.load(spec).then(
      () => this.tokenizers.set(spec, 'ready'),
      (err: unknown) => {
        this.tokenizers.set(spec, 'failed');
        this.o.log.warn({ err, tokenizer: spec }, 'tokenizer failed to load: no prefix routing for it');
      },
    );
    return false;
  }
}
