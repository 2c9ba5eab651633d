// The Model custom resource as TypeScript sees it. The API server validates Models with the CRD's
// OpenAPI schema and CEL rules (operator/crd.ts); this zod schema mirrors it for the local runtime,
// which reads YAML files with no API server in between. Both share the rules in rules.ts.
import { z } from 'zod';
import { availabilities, modelKinds } from '../core/catalogue/entry.ts';
import { isDecimalString } from '../core/money.ts';
import { nameRule, specProblems } from './rules.ts';

export const GROUP = 'modelplane.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const PLURAL = 'models';
export const FINALIZER = 'modelplane.dev/catalogue';
export const FIELD_MANAGER = 'modelplane-operator';

export const engineTypes = ['vllm', 'sglang', 'tei', 'llamacpp', 'simulator', 'custom'] as const;
export type EngineType = (typeof engineTypes)[number];

export const ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$';
export const DECIMAL_PATTERN = '^(0|[1-9][0-9]*)(\\.[0-9]{1,9})?$';

const decimal = z.string().refine(isDecimalString, 'must be a non-negative decimal string, e.g. "0.15"');
const quantity = z.union([z.string(), z.number()]);

export const priceSpecSchema = z.strictObject({
  input: decimal.optional(),
  cachedInput: decimal.optional(),
  output: decimal.optional(),
  perImage: decimal.optional(),
  perSecond: decimal.optional(),
});
export type PriceSpec = z.infer<typeof priceSpecSchema>;

export const engineSpecSchema = z.strictObject({
  type: z.enum(engineTypes),
  image: z.string().min(1).optional(),
  /** Weights to load (e.g. a Hugging Face repo); defaults to spec.id. */
  model: z.string().min(1).optional(),
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  env: z.array(z.strictObject({ name: z.string().min(1), value: z.string().optional() })).optional(),
  port: z.number().int().min(1).max(65535).optional(),
  gpus: z.number().int().min(0).max(64).optional(),
  resources: z
    .strictObject({
      requests: z.record(z.string(), quantity).optional(),
      limits: z.record(z.string(), quantity).optional(),
    })
    .optional(),
  replicas: z.number().int().min(0).optional(),
  minReplicas: z.number().int().min(0).optional(),
  maxReplicas: z.number().int().min(0).optional(),
  /**
   * vLLM: the only hosts the engine may download image/audio/video URLs from
   * (--allowed-media-domains). Unset: any public host the proxy lets through (README "Security").
   */
  allowedMediaDomains: z
    .array(z.string().regex(/^[A-Za-z0-9.-]{1,253}$/, 'a host name such as images.example.com'))
    .max(64)
    .optional(),
});
export type EngineSpec = z.infer<typeof engineSpecSchema>;

export const modelSpecSchema = z.strictObject({
  id: z.string().min(1).max(256).regex(new RegExp(ID_PATTERN)),
  kind: z.enum(modelKinds),
  /** The name the engine answers to (`model` in requests); defaults to id. */
  servedName: z.string().min(1).max(256).optional(),
  engine: engineSpecSchema.optional(),
  external: z
    .strictObject({
      url: z
        .string()
        .url()
        .regex(/^https?:\/\//),
    })
    .optional(),
  contextLength: z.number().int().positive().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  promptBounds: z
    .strictObject({
      perImage: z.number().int().min(0).max(1_000_000).optional(),
      perMessage: z.number().int().min(0).max(10_000).optional(),
      perRequest: z.number().int().min(0).max(1_000_000).optional(),
    })
    .optional(),
  pricing: z.record(z.string(), priceSpecSchema).refine((p) => Object.keys(p).length > 0, 'needs a currency'),
  availability: z.enum(availabilities).optional(),
  region: z.string().min(1).max(64).optional(),
  tags: z.array(z.string().min(1).max(64)).max(32).optional(),
  capabilities: z
    .strictObject({
      tools: z.boolean().optional(),
      vision: z.boolean().optional(),
      reasoning: z.boolean().optional(),
      edit: z.boolean().optional(),
      imageToVideo: z.boolean().optional(),
    })
    .optional(),
  ownedBy: z.string().min(1).max(64).optional(),
});
export type ModelSpec = z.infer<typeof modelSpecSchema>;

export interface Condition {
  type: 'Ready' | 'Progressing' | 'Degraded';
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
  conditions?: Condition[];
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
