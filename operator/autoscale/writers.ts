// Who writes a Model's replicas, read from its managedFields (the API server's record of which
// field manager last changed each field). Pure. Two writers of replicas undo each other — an HPA on
// a Model the operator scales turned a GPU pod on or off every ~15 s (issue 47.8) — so the scaler
// writes only while it is the one writer, and the Model says who else is.
//
// What the API server records (checked on kube-apiserver 1.33): a write through the scale
// subresource is an entry `{manager, operation: Update, subresource: scale}` owning
// `f:spec.f:engine.f:replicas`; a write that changes the value moves the field to its writer, one
// that leaves it as it was moves nothing. So the field's owner is whoever changed it last.
// Autoscalers (an HPA, KEDA's, `kubectl scale`) write through the scale subresource, as the
// operator does; the Model's author writes the spec itself (create, apply, edit), which sets a
// value once and is not a second writer — and is how the admin hands replicas back (below).
import { FIELD_MANAGER, type Model } from '../model/model.ts';

/** One entry of metadata.managedFields, as the API server returns it. */
export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  subresource?: string;
  time?: string | Date;
  fieldsV1?: unknown;
}

export interface ReplicasWriter {
  manager: string;
  /** 'scale' when written through the scale subresource. */
  subresource?: string;
  time?: string;
}

/**
 * Field managers that are the operator: its own name, and `node-fetch`, the name the API server
 * gave the operator's scale writes before they named a manager (client-node's user agent).
 */
const OURS = new Set([FIELD_MANAGER]);
const LEGACY_SCALE_MANAGER = 'node-fetch';

const ownsReplicas = (fields: unknown): boolean => {
  const spec = (fields as Record<string, unknown> | undefined)?.['f:spec'] as
    | Record<string, unknown>
    | undefined;
  const engine = spec?.['f:engine'] as Record<string, unknown> | undefined;
  return engine !== undefined && 'f:replicas' in engine;
};

/** The field manager that last changed spec.engine.replicas, or null (none recorded). */
export function replicasWriter(model: Model): ReplicasWriter | null {
  const entries = (model.metadata.managedFields ?? []) as readonly ManagedFieldsEntry[];
  const owner = entries.find((e) => ownsReplicas(e.fieldsV1));
  if (!owner) return null;
  const time = owner.time instanceof Date ? owner.time.toISOString() : owner.time;
  return {
    manager: owner.manager ?? 'an unnamed field manager',
    ...(owner.subresource ? { subresource: owner.subresource } : {}),
    ...(time ? { time } : {}),
  };
}

export const isOperator = (w: ReplicasWriter): boolean =>
  OURS.has(w.manager) || (w.manager === LEGACY_SCALE_MANAGER && w.subresource === 'scale');

/**
 * Another autoscaler on a Model the operator scales: someone else changed replicas through the
 * scale subresource since the operator last did. Null while the operator is the one writer.
 */
export function secondReplicasWriter(model: Model): ReplicasWriter | null {
  const w = replicasWriter(model);
  if (w === null || isOperator(w) || w.subresource !== 'scale') return null;
  return w;
}

/** "kube-controller-manager (through the scale subresource, at 2026-…Z)", for conditions and events. */
export function describeWriter(w: ReplicasWriter): string {
  const how = [w.subresource ? `through the ${w.subresource} subresource` : '', w.time ? `at ${w.time}` : '']
    .filter(Boolean)
    .join(', ');
  return how ? `${w.manager} (${how})` : w.manager;
}
