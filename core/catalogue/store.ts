// Catalogue persistence: one hash field per model (lowercased id → entry JSON) and a pub/sub
// message on every change. The operator writes; proxies and the console read a snapshot.

import { publish, type Redis } from '../redis/client.ts';
import { channels, globalKeys } from '../redis/keyspace.ts';
import {
  type CatalogueEntry,
  type CatalogueEntryInput,
  catalogueEntrySchema,
  catalogueKey,
} from './entry.ts';

export class CatalogueStore {
  constructor(private readonly redis: Redis) {}

  /** Writes (or replaces) an entry and announces it. Returns the parsed entry. */
  async put(input: CatalogueEntryInput): Promise<CatalogueEntry> {
    const entry = catalogueEntrySchema.parse(input);
    const key = catalogueKey(entry.id);
    await this.redis.hset(globalKeys.catalogue, key, JSON.stringify(entry));
    await publish(this.redis, channels.catalogueChanged, key);
    return entry;
  }

  async remove(id: string): Promise<boolean> {
    const key = catalogueKey(id);
    const removed = await this.redis.hdel(globalKeys.catalogue, key);
    if (removed > 0) await publish(this.redis, channels.catalogueChanged, key);
    return removed > 0;
  }

  async get(id: string): Promise<CatalogueEntry | null> {
    const raw = await this.redis.hget(globalKeys.catalogue, catalogueKey(id));
    return raw === null ? null : parseStored(raw);
  }

  async list(): Promise<CatalogueEntry[]> {
    const all = await this.redis.hgetall(globalKeys.catalogue);
    const entries: CatalogueEntry[] = [];
    for (const raw of Object.values(all)) {
      const entry = parseStored(raw);
      if (entry) entries.push(entry);
    }
    return entries.sort((a, b) => a.id.localeCompare(b.id));
  }
}

/** A corrupt entry must not take the catalogue down: it is skipped (and logged by the caller). */
function parseStored(raw: string): CatalogueEntry | null {
  try {
    const parsed = catalogueEntrySchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
