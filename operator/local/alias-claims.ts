// Which aliases each Model file may not have, for the local runtime: files are ranked by name, as
// ids are, so a later file yields an alias an earlier one (or any file's id) holds.
import { type NameClaim, takenAliases } from '../../core/catalogue/aliases.ts';
import type { Model } from '../model/model.ts';
import { canonical } from '../model/status.ts';

export function claimAliasesByFile(
  files: readonly string[],
  modelOf: (file: string) => { source: string; model: Model },
  before: ReadonlyMap<string, NameClaim[]>,
): { taken: Map<string, NameClaim[]>; changed: string[] } {
  const named = files.map((file) => {
    const m = modelOf(file);
    return { source: m.source, id: m.model.spec.id, aliases: m.model.spec.aliases ?? [] };
  });
  const taken = new Map<string, NameClaim[]>();
  const changed: string[] = [];
  named.forEach((model, i) => {
    const lost = takenAliases(model, named.slice(0, i), named);
    const file = files[i]!;
    if (lost.length > 0) taken.set(file, lost);
    if (canonical(lost) !== canonical(before.get(file) ?? [])) changed.push(file);
  });
  return { taken, changed };
}
