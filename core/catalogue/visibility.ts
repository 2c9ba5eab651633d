// Who sees what (SPEC "Catalogue rules", DESIGN "Catalogue"): pure decisions, no I/O.
import type { CatalogueEntry, Price } from './entry.ts';

export interface Viewer {
  /** The account's billing currency; null when it has none. */
  currency: string | null;
  /** Lowercased ids of invite-only models the account was granted. */
  grants: ReadonlySet<string>;
}

export function priceFor(entry: CatalogueEntry, currency: string | null): Price | null {
  if (!currency) return null;
  return entry.pricing[currency] ?? null;
}

/** Listed in GET /v1/models and callable through the API. */
export function isCallableBy(entry: CatalogueEntry, viewer: Viewer): boolean {
  if (priceFor(entry, viewer.currency) === null) return false;
  if (entry.availability === 'comingSoon') return false;
  if (entry.availability === 'inviteOnly' && !viewer.grants.has(entry.id.toLowerCase())) return false;
  return true;
}

/** Shown as a Playground card (comingSoon and invite-only appear with a ribbon). */
export function isDisplayableTo(entry: CatalogueEntry, viewer: Viewer): boolean {
  return priceFor(entry, viewer.currency) !== null;
}
