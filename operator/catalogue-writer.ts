// Catalogue writes shared by both runtimes. A put that would change nothing is skipped, because
// each put publishes a change and every proxy then reloads; a remove only deletes an entry this
// Model wrote, so deleting a duplicate never takes the original's entry with it.
import type { CatalogueEntryInput } from '../core/catalogue/entry.ts';
import { catalogueEntrySchema } from '../core/catalogue/entry.ts';
import type { CatalogueStore } from '../core/catalogue/store.ts';
import { canonical } from './status.ts';

export class CatalogueWriter {
  constructor(private readonly store: CatalogueStore) {}

  /** Returns true when the catalogue changed. */
  async put(input: CatalogueEntryInput): Promise<boolean> {
    const entry = catalogueEntrySchema.parse(input);
    const current = await this.store.get(entry.id);
    if (current && canonical(current) === canonical(entry)) return false;
    await this.store.put(entry);
    return true;
  }

  /** Removes the entry for `id` if `source` wrote it (or it has no source). */
  async remove(id: string, source: string): Promise<boolean> {
    const current = await this.store.get(id);
    if (!current) return false;
    if (current.source !== undefined && current.source !== source) return false;
    return this.store.remove(id);
  }

  /** Entries written by a source that `exists` no longer knows (a finalizer someone removed by hand). */
  async removeOrphans(prefix: string, exists: (source: string) => boolean): Promise<string[]> {
    const removed: string[] = [];
    for (const entry of await this.store.list()) {
      if (entry.source?.startsWith(prefix) && !exists(entry.source)) {
        if (await this.store.remove(entry.id)) removed.push(entry.id);
      }
    }
    return removed;
  }
}
