// The Model custom resource as TypeScript sees it. The API server validates Models with the CRD's
// OpenAPI schema and CEL rules, generated from these zod schemas (operator/model/crd/); zod
// validates them for the local runtime, which reads YAML files with no API server in between.
// Both run the cross-field rules of rules.ts.
import { z } from 'zod';
import { dateTime, int64 } from './kube-schema.ts';
import { type ModelEngines, nameRule, specProblems } from './rules.ts';
import { type ModelSpec, modelSpecSchema } from './spec.ts';

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
  engineSpecSchema,
  ID_PATTERN,
  type ModelSpec,
  modelSpecSchema,
  type PriceSpec,
  priceSpecSchema,
} from './spec.ts';

export const conditionTypes = [
  'Ready',
  'Progressing',
  'Degraded',
  'Scaling',
  'WeightsCached',
  'AdapterLoaded',
] as const;
export type ConditionType = (typeof conditionTypes)[number];

// Status is written by the operator and never parsed: this schema is its type and the CRD's
// status schema (what the API server stores), so a field added here is one the server keeps.
const conditionSchema = z.object({
  // Any string to the API server; the operator writes only these.
  type: z.string().transform((t) => t as ConditionType),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string().optional(),
  message: z.string().optional(),
  lastTransitionTime: dateTime().optional(),
  observedGeneration: int64().optional(),
});
export type Condition = z.infer<typeof conditionSchema>;

const autoscalingStatusSchema = z
  .object({
    desiredReplicas: z.int32().optional(),
    recommendation: z.int32().optional(),
    demand: z.int32().describe('In flight + queued + held, summed over the proxies.').optional(),
    inFlight: z.int32().optional(),
    queued: z.int32().optional(),
    held: z.int32().optional(),
    saturated: z.boolean().optional(),
    reason: z.string().optional(),
    lastScaleTime: dateTime().optional(),
    lastScaleUpTime: dateTime().optional(),
    lastDemandTime: dateTime().optional(),
  })
  .describe("The scaler's last decision and its inputs.");
/** The scaler's last decision and its inputs (operator/autoscale/), for `kubectl get models`. */
export type AutoscalingStatus = z.infer<typeof autoscalingStatusSchema>;

export const modelStatusSchema = z.object({
  observedGeneration: int64().optional(),
  replicas: z.int32().optional(),
  readyReplicas: z.int32().optional(),
  // Label selector of the engine pods, for the scale subresource (HPA).
  selector: z.string().optional(),
  endpoints: z.array(z.string()).optional(),
  autoscaling: autoscalingStatusSchema.optional(),
  conditions: z
    .array(conditionSchema)
    .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] })
    .optional(),
});
export type ModelStatus = z.infer<typeof modelStatusSchema>;

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
  /** Which field manager last changed each field (the API server's; autoscale/writers.ts reads it). */
  managedFields?: readonly unknown[];
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

/**
 * Validates a Model the way the API server would; errors name the field (or the rule broken).
 * `engines`: the engine kinds' names and rules (operator/engines/ acceptedEngines()).
 */
export function parseModel(
  input: unknown,
  engines: ModelEngines,
): { ok: true; model: Model } | { ok: false; problems: string[] } {
  const parsed = manifestSchema.safeParse(input);
  // The CRD's enum on spec.engine.type, worded as zod words its own enums.
  const type = (input as { spec?: { engine?: { type?: unknown } } } | null)?.spec?.engine?.type;
  const unknownType =
    typeof type === 'string' && !engines.types.includes(type)
      ? [
          `spec.engine.type: Invalid option: expected one of ${engines.types.map((t) => JSON.stringify(t)).join('|')}`,
        ]
      : [];
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    return { ok: false, problems: [...unknownType, ...issues] };
  }
  if (unknownType.length > 0) return { ok: false, problems: unknownType };
  const problems = specProblems(parsed.data.spec, engines);
  if (!nameRule.holds(parsed.data.metadata.name)) problems.push(nameRule.message);
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, model: parsed.data as Model };
}

export const modelKey = (m: { metadata: ModelMetadata }) =>
  `${m.metadata.namespace ?? ''}/${m.metadata.name}`;
export const modelSource = (m: { metadata: ModelMetadata }) =>
  `Model/${m.metadata.namespace ?? 'default'}/${m.metadata.name}`;
