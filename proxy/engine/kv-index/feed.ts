// Keeps one KV-event stream per (model, endpoint) the catalogue lists with an events address, in
// step with the catalogue: a new endpoint is subscribed to, one that left is closed and its blocks
// dropped from the index (an engine gone holds nothing).
import type { CatalogueEntry } from '../../../core/catalogue/index.ts';
import { catalogueKey } from '../../../core/catalogue/index.ts';
import { EventStream } from './event-stream.ts';
import type { PrefixIndex } from './prefix-index.ts';

interface Subscription {
  model: string;
  endpoint: string;
  address: string;
  stream: EventStream;
}

export interface FeedLog {
  warn(obj: object, msg: string): void;
}

export class KvEventFeed {
  private readonly subs = new Map<string, Subscription>();

  constructor(
    private readonly index: PrefixIndex,
    private readonly log: FeedLog,
  ) {}

  /** The streams open now (tests and metrics): resyncs and replays per endpoint. */
  streams(): { model: string; endpoint: string; resyncs: number; replays: number }[] {
    return [...this.subs.values()].map((s) => ({
      model: s.model,
      endpoint: s.endpoint,
      resyncs: s.stream.resyncs,
      replays: s.stream.replays,
    }));
  }

  sync(entries: readonly CatalogueEntry[]): void {
    const wanted = new Map<
      string,
      { model: string; endpoint: string; kv: NonNullable<CatalogueEntry['endpoints'][number]['kvEvents']> }
    >();
    for (const entry of entries) {
      if (entry.kind !== 'chat') continue;
      const model = catalogueKey(entry.id);
      for (const e of entry.endpoints) {
        if (e.kvEvents) wanted.set(`${model}\u0000${e.url}`, { model, endpoint: e.url, kv: e.kvEvents });
      }
    }
    for (const [key, sub] of this.subs) {
      const w = wanted.get(key);
      if (w && addressOf(w.kv) === sub.address) continue;
      sub.stream.close();
      this.subs.delete(key);
      this.index.dropEndpoint(sub.model, sub.endpoint);
    }
    for (const [key, w] of wanted) {
      if (this.subs.has(key)) continue;
      const { model, endpoint } = w;
      const stream = new EventStream({
        url: w.kv.url,
        replayUrl: w.kv.replayUrl ?? null,
        topic: w.kv.topic,
        onEvents: (events) => this.index.apply(model, endpoint, events),
        onResync: (reason) => {
          this.index.dropEndpoint(model, endpoint);
          this.log.warn(
            { model, endpoint, reason },
            "KV event stream resynced: the endpoint's blocks are relearnt",
          );
        },
        onError: (err) => this.log.warn({ err, model, endpoint }, 'KV event stream error'),
      });
      this.subs.set(key, { model, endpoint, address: addressOf(w.kv), stream });
    }
  }

  close(): void {
    for (const sub of this.subs.values()) sub.stream.close();
    this.subs.clear();
  }
}

function addressOf(kv: { url: string; replayUrl?: string; topic: string }): string {
  return `${kv.url} ${kv.replayUrl ?? ''} ${kv.topic}`;
}
