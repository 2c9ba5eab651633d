// Where a Model's engine pods may run, decided purely: the profile it names (`<profile>:<count>`,
// every per-unit quantity multiplied by the count, as KubeAI does), the pod-wide defaults, and the
// Model's own narrow override (spec.engine.scheduling) on top. A profile the fleet does not define
// is not guessed around: the plan reports it on the Model and leaves the Deployment as it is.
import type { V1PodSpec } from '@kubernetes/client-node';
import type { EngineSpec } from '../model/spec.ts';
import { type FleetConfig, QUANTITY_PATTERN, type ResourceProfile } from './profiles.ts';

/** The pod fields placement decides; merged into the engine pod's spec. */
export type PlacementPodFields = Pick<
  V1PodSpec,
  | 'nodeSelector'
  | 'affinity'
  | 'tolerations'
  | 'runtimeClassName'
  | 'priorityClassName'
  | 'serviceAccountName'
  | 'imagePullSecrets'
  | 'securityContext'
>;

export interface Placement {
  /** `<profile>` when the Model names one. */
  profile?: string;
  /** The profile's resources times the count; the Model's own engine.resources win per key. */
  resources?: { requests: Record<string, string>; limits: Record<string, string> };
  /** Accelerators per pod the profile grants (any `<vendor>/gpu` limit), for tensor parallelism. */
  gpus?: number;
  pod: PlacementPodFields;
}

export type PlacementResult =
  | { ok: true; placement: Placement }
  | { ok: false; reason: 'UnknownResourceProfile'; message: string };

export function parseResourceProfile(ref: string): { name: string; count: number } {
  const [name = '', count] = ref.split(':');
  return { name, count: count === undefined ? 1 : Number(count) };
}

/** `16Gi` × 2 = `32Gi`; `500m` × 3 = `1500m`. Decimals keep at most 3 places (quantities allow that). */
export function multiplyQuantity(quantity: string, count: number): string {
  const match = QUANTITY_PATTERN.exec(quantity);
  if (!match) throw new Error(`not a quantity: ${quantity}`);
  const value = Number(match[1]) * count;
  return `${Number.isInteger(value) ? value : Number(value.toFixed(3))}${match[2] ?? ''}`;
}

const times = (q: Record<string, string> | undefined, count: number) =>
  Object.fromEntries(Object.entries(q ?? {}).map(([k, v]) => [k, multiplyQuantity(v, count)]));

function acceleratorCount(limits: Record<string, string>): number | undefined {
  const gpus = Object.entries(limits).filter(([k]) => k.endsWith('/gpu'));
  return gpus.length ? gpus.reduce((n, [, v]) => n + Math.floor(Number(v)), 0) : undefined;
}

export function placementFor(engine: EngineSpec, fleet: FleetConfig): PlacementResult {
  const defaults = fleet.podDefaults;
  let profile: ResourceProfile = {};
  let named: { name: string; count: number } | undefined;
  if (engine.resourceProfile) {
    named = parseResourceProfile(engine.resourceProfile);
    const found = fleet.resourceProfiles[named.name];
    if (!found) {
      const known = Object.keys(fleet.resourceProfiles);
      return {
        ok: false,
        reason: 'UnknownResourceProfile',
        message: `resource profile ${named.name} is not defined (the chart's engines.resourceProfiles has ${known.length ? known.join(', ') : 'none'})`,
      };
    }
    profile = found;
  }
  const own = engine.scheduling ?? {};
  const nodeSelector = { ...profile.nodeSelector, ...own.nodeSelector };
  const tolerations = [...(profile.tolerations ?? []), ...(own.tolerations ?? [])];
  const pod: PlacementPodFields = {
    ...(Object.keys(nodeSelector).length ? { nodeSelector } : {}),
    ...(profile.affinity ? { affinity: profile.affinity as V1PodSpec['affinity'] } : {}),
    ...(tolerations.length ? { tolerations: tolerations as V1PodSpec['tolerations'] } : {}),
    ...(profile.runtimeClassName ? { runtimeClassName: profile.runtimeClassName } : {}),
    ...((own.priorityClassName ?? profile.priorityClassName)
      ? { priorityClassName: own.priorityClassName ?? profile.priorityClassName }
      : {}),
    ...(defaults.serviceAccountName ? { serviceAccountName: defaults.serviceAccountName } : {}),
    ...(defaults.imagePullSecrets?.length ? { imagePullSecrets: defaults.imagePullSecrets } : {}),
    ...(defaults.securityContext
      ? { securityContext: defaults.securityContext as V1PodSpec['securityContext'] }
      : {}),
  };
  if (!named) return { ok: true, placement: { pod } };
  const limits = times(profile.limits, named.count);
  const gpus = acceleratorCount(limits);
  return {
    ok: true,
    placement: {
      profile: named.name,
      resources: { requests: times(profile.requests, named.count), limits },
      ...(gpus === undefined ? {} : { gpus }),
      pod,
    },
  };
}

/** The profile's resources, then the Model's own per key (a one-off memory bump needs no new profile). */
export function mergedResources(
  placement: Placement | undefined,
  own: EngineSpec['resources'],
): { requests: Record<string, string>; limits: Record<string, string> } {
  const str = (q: Record<string, string | number> | undefined) =>
    Object.fromEntries(Object.entries(q ?? {}).map(([k, v]) => [k, String(v)]));
  return {
    requests: { ...placement?.resources?.requests, ...str(own?.requests) },
    limits: { ...placement?.resources?.limits, ...str(own?.limits) },
  };
}
