// Who holds a catalogue name when several Models claim it: the oldest live Model (ties broken by
// namespace/name), over the informer's list of Models. Pure; the Kubernetes runtime passes its cache.
import { type NameClaim, takenAliases } from '../../core/catalogue/aliases.ts';
import { catalogueKey } from '../../core/catalogue/entry.ts';
import { type Model, modelKey, modelSource } from '../model/model.ts';

const created = (m: Model) => new Date(m.metadata.creationTimestamp ?? 0).getTime();

/** The oldest live Model with this id owns it; returns that owner when it is not `model`. */
export function idOwner(model: Model, models: readonly Model[]): string | undefined {
  const id = catalogueKey(model.spec.id);
  const rivals = models
    .filter((m) => catalogueKey(m.spec.id) === id && !m.metadata.deletionTimestamp)
    .sort((a, b) => created(a) - created(b) || modelKey(a).localeCompare(modelKey(b)));
  const owner = rivals[0];
  return owner && modelKey(owner) !== modelKey(model) ? modelSource(owner) : undefined;
}

/** Aliases of this Model an older Model holds, or another Model's id (the newer Model yields). */
export function aliasesTaken(model: Model, models: readonly Model[]): NameClaim[] {
  if (!model.spec.aliases?.length) return [];
  const named = (m: Model) => ({ source: modelSource(m), id: m.spec.id, aliases: m.spec.aliases ?? [] });
  const live = models.filter((m) => !m.metadata.deletionTimestamp);
  const earlier = live.filter(
    (m) => created(m) < created(model) || (created(m) === created(model) && modelKey(m) < modelKey(model)),
  );
  return takenAliases(named(model), earlier.map(named), live.map(named));
}
