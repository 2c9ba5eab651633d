// An in-memory copy of the catalogue for hot paths (every proxy request resolves a model). It is
// refreshed on each change message and on a slow timer, so a missed message heals itself.

import { offMessage, onMessage, type Redis, subscribe } from '../redis/client.ts';
import { channels } from '../redis/keyspace.ts';
import { NameIndex } from './aliases.ts';
import { type CatalogueEntry, catalogueKey } from './entry.ts';
import { CatalogueStore } from './store.ts';

export interface CatalogueSnapshotOptions {
  /** A client that may enter subscriber mode (not shared with commands). */
  subscriber: Redis;
  refreshMs?: number;
  onError?: (err: unknown) => void;
}

export class CatalogueSnapshot {
  private entries = new Map<string, CatalogueEntry>();
  private names = new NameIndex([]);
  private timer: NodeJS.Timeout | undefined;
  private loadedOnce = false;
  private readonly store: CatalogueStore;
  private listeners = new Set<() => void>();

  constructor(
    redis: Redis,
    private readonly options: CatalogueSnapshotOptions,
  ) {
    this.store = new CatalogueStore(redis);
  }

  private readonly onMessage = (channel: string) => {
    if (channel === channels.catalogueChanged) void this.refresh();
  };
  // Messages published while the subscriber was disconnected are lost: reload as soon as it is back.
  private readonly onReady = () => void this.refresh();

  async start(): Promise<void> {
    const { subscriber } = this.options;
    onMessage(subscriber, this.onMessage);
    subscriber.on('ready', this.onReady);
    await subscribe(subscriber, channels.catalogueChanged);
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.options.refreshMs ?? 30_000);
    this.timer.unref();
  }

  /** Stops following changes. The subscriber may be shared with other channels, so it stays subscribed. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    offMessage(this.options.subscriber, this.onMessage);
    this.options.subscriber.off('ready', this.onReady);
  }

  get loaded(): boolean {
    return this.loadedOnce;
  }

  async refresh(): Promise<void> {
    try {
      const list = await this.store.list();
      this.entries = new Map(list.map((e) => [catalogueKey(e.id), e]));
      this.names = new NameIndex(list);
      this.loadedOnce = true;
      for (const l of this.listeners) l();
    } catch (err) {
      this.options.onError?.(err);
    }
  }

  /**
   * Case-insensitive lookup of an id or an alias; the entry carries the canonical spelling, which
   * is the id the call is billed and answered under.
   */
  get(id: string): CatalogueEntry | undefined {
    return this.names.resolve(id);
  }

  /** Exact aliases and the entries they resolve to (GET /v1/models lists them). */
  aliases(): { alias: string; entry: CatalogueEntry }[] {
    return this.names.listedAliases();
  }

  all(): CatalogueEntry[] {
    return [...this.entries.values()];
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
