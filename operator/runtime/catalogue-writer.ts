// Catalogue writes shared by both runtimes. A put that would change nothing is skipped, because
// each put publishes a change and every proxy then reloads; a remove only deletes an entry this
// Model wrote, so deleting a duplicate never takes the original's entry with it.
//
// Fenced (the Kubernetes runtime): every write carries the leadership term the runtime holds and
// goes through core/catalogue/fence.ts, so Redis refuses a term older than the newest one. With no
// term — not leading, or stepped down by the renew deadline — the writer refuses before asking
// Redis: a replica stops writing the moment it stops leading, and Redis stops it even if it does
// not know. The local runtime has one writer and no leader, so it writes unfenced.
import type { CatalogueEntryInput } from '../../core/catalogue/entry.ts';
import { catalogueEntrySchema } from '../../core/catalogue/entry.ts';
import type { FencedCatalogue } from '../../core/catalogue/fence.ts';
import type { CatalogueStore } from '../../core/catalogue/store.ts';
import { canonical } from '../model/status.ts';

/** A fenced writer asked to write while it holds no term (not the leader). */
export class NotLeadingError extends Error {
  constructor() {
    super('not the leader: catalogue writes are fenced off');
    this.name = 'NotLeadingError';
  }
}

export class CatalogueWriter {
  private term: number | null = null;

  constructor(
    private readonly store: CatalogueStore,
    private readonly fence?: FencedCatalogue,
  ) {}

  /**
   * Starts a term and raises the fence in Redis to it, so every older term is refused from now on.
   * The term is taken before the claim returns: a failed claim costs nothing, since every write
   * raises the fence too, and a step-down (follow) while the claim is in flight must win.
   */
  async lead(term: number): Promise<void> {
    if (!this.fence) return;
    this.term = term;
    await this.fence.claim(term);
  }

  /** Ends the term locally: writes are refused without asking Redis. */
  follow(): void {
    this.term = null;
  }

  /** The term writes are made under (null when fenced off); tests force a stale write with it. */
  get currentTerm(): number | null {
    return this.term;
  }

  /** The newest term that wrote the catalogue (what a new term must exceed). */
  async newestTerm(): Promise<number> {
    return this.fence ? this.fence.fence() : 0;
  }

  /** Returns true when the catalogue changed. */
  async put(input: CatalogueEntryInput): Promise<boolean> {
    const entry = catalogueEntrySchema.parse(input);
    const term = this.writableTerm();
    const current = await this.store.get(entry.id);
    if (current && canonical(current) === canonical(entry)) return false;
    if (term === undefined) await this.store.put(entry);
    else await this.fence?.put(entry, term);
    return true;
  }

  /** Removes the entry for `id` if `source` wrote it (or it has no source). */
  async remove(id: string, source: string): Promise<boolean> {
    const term = this.writableTerm();
    const current = await this.store.get(id);
    if (!current) return false;
    if (current.source !== undefined && current.source !== source) return false;
    if (term === undefined) return this.store.remove(id);
    return (await this.fence?.remove(id, term)) ?? false;
  }

  /** Entries written by a source that `exists` no longer knows (a finalizer someone removed by hand). */
  async removeOrphans(prefix: string, exists: (source: string) => boolean): Promise<string[]> {
    const removed: string[] = [];
    for (const entry of await this.store.list()) {
      if (entry.source?.startsWith(prefix) && !exists(entry.source)) {
        if (await this.remove(entry.id, entry.source)) removed.push(entry.id);
      }
    }
    return removed;
  }

  /** undefined: unfenced; a number: the term to write under; throws when fenced off. */
  private writableTerm(): number | undefined {
    if (!this.fence) return undefined;
    if (this.term === null) throw new NotLeadingError();
    return this.term;
  }
}
