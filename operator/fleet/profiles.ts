// The cluster admin's side of engine placement (after KubeAI's resourceProfiles): named engine
// profiles (per-unit resources, node selector, affinity, tolerations, runtime and priority class)
// and what every engine pod shares (service account, pull secrets, security context), written in
// the chart's values and read by the operator from the ConfigMap it renders. A Model names a
// profile and a count (`resourceProfile: "nvidia-h100:2"`); Model authors never repeat taints.
// Parsed once at start-up: a bad file stops the operator with the path of the bad field.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { z } from 'zod';

/** A Kubernetes quantity we can multiply: a plain decimal with an optional suffix (500m, 16Gi, 2). */
export const QUANTITY_PATTERN = /^([0-9]+(?:\.[0-9]+)?)([A-Za-z]{0,2})$/;
const quantity = z
  .union([z.string(), z.number()])
  .transform(String)
  .refine((q) => QUANTITY_PATTERN.test(q), 'a quantity such as 8, 500m or 64Gi');
const quantities = z.record(z.string().min(1), quantity);
// Kubernetes' own shapes are passed through as the admin wrote them: the API server validates them.
const kubeObject = z.record(z.string(), z.unknown());

export const resourceProfileSchema = z.strictObject({
  /** Per unit of the profile; `<name>:<count>` multiplies every quantity by the count. */
  requests: quantities.optional(),
  limits: quantities.optional(),
  nodeSelector: z.record(z.string(), z.string()).optional(),
  affinity: kubeObject.optional(),
  tolerations: z.array(kubeObject).optional(),
  runtimeClassName: z.string().min(1).optional(),
  priorityClassName: z.string().min(1).optional(),
});
export type ResourceProfile = z.infer<typeof resourceProfileSchema>;

export const podDefaultsSchema = z.strictObject({
  serviceAccountName: z.string().min(1).optional(),
  imagePullSecrets: z.array(z.strictObject({ name: z.string().min(1) })).optional(),
  /** The pod-level securityContext of every engine pod. */
  securityContext: kubeObject.optional(),
});
export type PodDefaults = z.infer<typeof podDefaultsSchema>;

/**
 * Where a cache profile keeps weights (after KubeAI's cacheProfiles.sharedFilesystem): a
 * ReadWriteMany claim, either one the admin made (claimName, in each Model's namespace) or one the
 * operator makes per namespace (`models-cache-<profile>`) from a storage class or a volume.
 */
/**
 * Where a profile's loader (and evicting) Jobs run: CPU work that needs the cache volume and the
 * network, not a GPU. By default the scheduler picks any node; where only some nodes reach the
 * storage (or every node is tainted), the admin says which, as for engines.
 */
export const loaderPlacementSchema = z.strictObject({
  nodeSelector: z.record(z.string(), z.string()).optional(),
  affinity: kubeObject.optional(),
  tolerations: z.array(kubeObject).optional(),
  priorityClassName: z.string().min(1).optional(),
  requests: quantities.optional(),
  limits: quantities.optional(),
  /**
   * How long a loader (evictor) Job may run, pending pods included, before the Job controller
   * fails it (activeDeadlineSeconds): a Job that can never start ends, and says so on its Model.
   * Defaults 21600 (6 h: hundreds of GB over a slow link) and 600.
   */
  loadDeadlineSeconds: z.int().min(1).max(604_800).optional(),
  evictDeadlineSeconds: z.int().min(1).max(86_400).optional(),
});
export type LoaderPlacement = z.infer<typeof loaderPlacementSchema>;

export const cacheProfileSchema = z.strictObject({
  loader: loaderPlacementSchema.optional(),
  sharedFilesystem: z
    .strictObject({
      claimName: z.string().min(1).max(253).optional(),
      storageClassName: z.string().min(1).max(253).optional(),
      persistentVolumeName: z.string().min(1).max(253).optional(),
      /** The claim's request when the operator makes it. */
      size: quantity.default('1Ti'),
    })
    .refine(
      (f) =>
        (f.claimName === undefined) !==
        (f.storageClassName === undefined && f.persistentVolumeName === undefined),
      'claimName, or storageClassName / persistentVolumeName (not both)',
    ),
});
export type CacheProfile = z.infer<typeof cacheProfileSchema>;

export const fleetConfigSchema = z.strictObject({
  resourceProfiles: z
    .record(z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/), resourceProfileSchema)
    .default({}),
  podDefaults: podDefaultsSchema.default({}),
  cacheProfiles: z
    .record(z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/), cacheProfileSchema)
    .default({}),
  /** The image of weight loader Jobs: the operator's own (it holds operator/weights/loader.ts). */
  weightsLoader: z.strictObject({ image: z.string().min(1).optional() }).default({}),
});
export type FleetConfig = z.infer<typeof fleetConfigSchema>;

export const emptyFleet: FleetConfig = {
  resourceProfiles: {},
  podDefaults: {},
  cacheProfiles: {},
  weightsLoader: {},
};

export function parseFleetConfig(input: unknown): FleetConfig {
  const parsed = fleetConfigSchema.safeParse(input ?? {});
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n');
    throw new Error(`invalid engine fleet configuration:\n${problems}`);
  }
  return parsed.data;
}

/** The chart mounts its ConfigMap's `fleet.yaml` and names it in OPERATOR_FLEET_CONFIG. */
export function loadFleetConfig(path: string): FleetConfig {
  return parseFleetConfig(parse(readFileSync(path, 'utf8')));
}
