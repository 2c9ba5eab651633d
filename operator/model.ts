// The Model custom resource as TypeScript sees it. The API server validates Models with the CRD's
// OpenAPI schema and CEL rules (operator/crd.ts); this zod schema mirrors it for the local runtime,
// which reads YAML files with no API server in between. Both share the rules in rules.ts.
import { z } from 'zod';
import { type ModelSpec, modelSpecSchema } from './model-spec.ts';
import { nameRule, specProblems } from './rules.ts';

export const GROUP = 'modelplane.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const PLURAL = 'models';
export const FINALIZER = 'modelplane.dev/catalogue';
export const FIELD_MANAGER = 'modelplane-operator';

// The spec's schema lives in ./model-spec.ts, which ./rules.ts reads too (no import circle).
export {
  DECIMAL_PATTERN,
  type EngineSpec,
  type EngineType,
  engineSpecSchema,
  engineTypes,
  ID_PATTERN,
  type ModelSpec,
  modelSpecSchema,
  type PriceSpec,
  priceSpecSchema,
} from './model-spec.ts';

export interface Condition {
  type: 'Ready' | 'Progressing' | 'Degraded' | 'Scaling' | 'WeightsCached';
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export interface ModelStatus {
  observedGeneration?: number;
  replicas?: number;
  readyReplicas?: number;
  /** Label selector of the engine pods, for the scale subresource (HPA). */
  selector?: string;
  endpoints?: string[];
  /** The scaler's last decision and its inputs (operator/autoscale/), for `kubectl get models`. */
  autoscaling?: AutoscalingStatus;
  conditions?: Condition[];
}

export interface AutoscalingStatus {
  desiredReplicas: number;
  recommendation: number;
  demand: number;
  inFlight: number;
  queued: number;
  held: number;
  saturated: boolean;
  reason: string;
  lastScaleTime?: string;
  lastScaleUpTime?: string;
  lastDemandTime?: string;
}

export interface ModelMetadata {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string | Date;
  deletionTimestamp?: string | Date;
  finalizers?: string[];
  annotations?: Record<string, string>;
}

export interface Model {
  apiVersion: typeof API_VERSION;
  kind: 'Model';
  metadata: ModelMetadata;
  spec: ModelSpec;
  status?: ModelStatus;
}

const manifestSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('Model'),
  metadata: z.looseObject({ name: z.string(), namespace: z.string().optional() }),
  spec: modelSpecSchema,
});

/** Validates a Model the way the API server would; errors name the field (or the rule broken). */
export function parseModel(input: unknown): { ok: true; model: Model } | { ok: false; problems: string[] } {
  const parsed = manifestSchema.safeParse(input);
  if (!parsed.success) {
    return { ok: false, problems: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) };
  }
  const problems = specProblems(parsed.data.spec);
  if (!nameRule.holds(parsed.data.metadata.name)) problems.push(nameRule.message);
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, model: parsed.data as Model };
}

export const modelKey = (m: { metadata: ModelMetadata }) =>
  `${m.metadata.namespace ?? ''}/${m.metadata.name}`;
export const modelSource = (m: { metadata: ModelMetadata }) =>
  `Model/${m.metadata.namespace ?? 'default'}/${m.metadata.name}`;
