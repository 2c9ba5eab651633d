// Model aliases (issue 30): other names a Model answers to, for clients that hard-code a model
// name (Claude Code's small/fast model, Codex's default). An alias is exact (`claude-haiku-4-5`)
// or a prefix pattern ending in one `*` (`claude-haiku-*`). Resolution, in order: a catalogue id,
// an exact alias, then the longest matching pattern — so a real model id can never be shadowed by
// another model's alias, and a narrower pattern beats a broader one. Case-insensitive, as ids are.
//
// Aliases are per platform: they resolve to the entry, and the entry (its id, price, visibility)
// is what the call is billed, recorded and answered as (docs/models.md#aliases).
import { type CatalogueEntry, catalogueKey } from './entry.ts';

/** `claude-haiku-*` or `gpt-5`: an id-like name, with an optional `*` as its last character. */
export const ALIAS_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:/@+-]*\\*?$';

export const isPattern = (alias: string) => alias.endsWith('*');

/** The lookup side of the catalogue's names: built once per snapshot refresh. */
export class NameIndex {
  private readonly ids = new Map<string, CatalogueEntry>();
  private readonly exact = new Map<string, CatalogueEntry>();
  /** Longest prefix first, so the first match is the narrowest. */
  private readonly patterns: { prefix: string; entry: CatalogueEntry }[] = [];

  constructor(entries: readonly CatalogueEntry[]) {
    for (const e of entries) this.ids.set(catalogueKey(e.id), e);
    // Oldest entry first: if two entries ever carry the same alias (the operator refuses that, but
    // a hand-written catalogue may not), the older one keeps it, as the operator would decide.
    const byAge = [...entries].sort((a, b) => a.created - b.created || a.id.localeCompare(b.id));
    for (const e of byAge) {
      for (const alias of e.aliases) {
        const key = catalogueKey(alias);
        if (isPattern(alias)) {
          const prefix = key.slice(0, -1);
          if (!this.patterns.some((p) => p.prefix === prefix)) this.patterns.push({ prefix, entry: e });
        } else if (!this.ids.has(key) && !this.exact.has(key)) {
          this.exact.set(key, e);
        }
      }
    }
    this.patterns.sort((a, b) => b.prefix.length - a.prefix.length);
  }

  resolve(name: string): CatalogueEntry | undefined {
    const key = catalogueKey(name);
    const hit = this.ids.get(key) ?? this.exact.get(key);
    if (hit) return hit;
    return this.patterns.find((p) => key.startsWith(p.prefix))?.entry;
  }

  /** Exact aliases with the entry each resolves to (patterns cannot be listed). */
  listedAliases(): { alias: string; entry: CatalogueEntry }[] {
    const out: { alias: string; entry: CatalogueEntry }[] = [];
    for (const e of this.ids.values()) {
      for (const alias of e.aliases) {
        if (!isPattern(alias) && this.exact.get(catalogueKey(alias)) === e) out.push({ alias, entry: e });
      }
    }
    return out;
  }
}

/** A name another Model holds: who holds it, and whether as its id or an alias. */
export interface NameClaim {
  alias: string;
  heldBy: string;
  as: 'id' | 'alias';
}

export interface NamedModel {
  /** Who the model is, in messages (`Model/default/llama`, a file name). */
  source: string;
  id: string;
  aliases: readonly string[];
}

/**
 * The aliases of `model` it may not have: one equal to another model's id (ids always win, older
 * or not), or one another model listed first holds too (`earlier`: the models ahead in the
 * runtime's order — oldest first in Kubernetes, file order locally). Pure: both runtimes call it.
 */
export function takenAliases(
  model: NamedModel,
  earlier: readonly NamedModel[],
  everyone: readonly NamedModel[],
): NameClaim[] {
  const ids = new Map<string, string>();
  for (const m of everyone) if (m.source !== model.source) ids.set(catalogueKey(m.id), m.source);
  const aliases = new Map<string, string>();
  for (const m of earlier) {
    if (m.source === model.source) continue;
    for (const a of m.aliases) aliases.set(catalogueKey(a), m.source);
  }
  const taken: NameClaim[] = [];
  for (const alias of model.aliases) {
    const key = catalogueKey(alias);
    const id = ids.get(key);
    if (id !== undefined) taken.push({ alias, heldBy: id, as: 'id' });
    else if (aliases.has(key)) taken.push({ alias, heldBy: aliases.get(key)!, as: 'alias' });
  }
  return taken;
}
