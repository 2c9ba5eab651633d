// A Model's spec as zod sees it (mirroring the CRD's OpenAPI schema), on its own so that the
// cross-field rules (./rules.ts) and the resource around it (./model.ts) can both read it.
import { z } from 'zod';
import { ALIAS_PATTERN } from '../core/catalogue/aliases.ts';
import { availabilities, modelKinds } from '../core/catalogue/entry.ts';
import { isDecimalString } from '../core/money.ts';
import { weightsSpecSchema } from './weights/spec.ts';

export const engineTypes = ['vllm', 'sglang', 'tei', 'llamacpp', 'simulator', 'custom'] as const;
export type EngineType = (typeof engineTypes)[number];

export const ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$';
/** `<profile>` or `<profile>:<count>` (operator/placement.ts); the count multiplies the profile. */
export const RESOURCE_PROFILE_PATTERN = '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[1-9][0-9]{0,2})?$';
/** A rollout's maxSurge / maxUnavailable: a pod count or a percentage, as a Deployment takes it. */
export const INT_OR_PERCENT_PATTERN = '^(0|[1-9][0-9]{0,3})%?$';
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

const keyRef = z.strictObject({
  name: z.string().min(1).max(253),
  key: z.string().min(1).max(253),
  optional: z.boolean().optional(),
});
/** A value, or one read from a Secret or ConfigMap key: credentials stay in Secrets. */
const envVarSchema = z
  .strictObject({
    name: z.string().min(1),
    value: z.string().optional(),
    valueFrom: z
      .strictObject({ secretKeyRef: keyRef.optional(), configMapKeyRef: keyRef.optional() })
      .refine(
        (v) => (v.secretKeyRef === undefined) !== (v.configMapKeyRef === undefined),
        'one of secretKeyRef or configMapKeyRef',
      )
      .optional(),
  })
  .refine((e) => e.value === undefined || e.valueFrom === undefined, 'value or valueFrom, not both');
const envFromSchema = z
  .strictObject({
    prefix: z.string().max(253).optional(),
    secretRef: z
      .strictObject({ name: z.string().min(1).max(253), optional: z.boolean().optional() })
      .optional(),
    configMapRef: z
      .strictObject({ name: z.string().min(1).max(253), optional: z.boolean().optional() })
      .optional(),
  })
  .refine(
    (e) => (e.secretRef === undefined) !== (e.configMapRef === undefined),
    'one of secretRef or configMapRef',
  );
const tolerationSchema = z.strictObject({
  key: z.string().max(316).optional(),
  operator: z.enum(['Exists', 'Equal']).optional(),
  value: z.string().max(63).optional(),
  effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
  tolerationSeconds: z.number().int().optional(),
});
const intOrPercent = z.union([z.number().int().min(0), z.string().regex(new RegExp(INT_OR_PERCENT_PATTERN))]);

export const autoscalerWriters = ['operator', 'external'] as const;

export const autoscalingSchema = z.strictObject({
  /** Requests in flight (or queued, or held) one replica is sized for. Default 8. */
  targetInFlight: z.number().int().min(1).max(100_000).optional(),
  /** No scale-down sooner than this after a scale-up. Default 30. */
  scaleDownDelaySeconds: z.number().int().min(0).max(86_400).optional(),
  /** A scale-down goes to the highest recommendation of this window. Default 60. */
  windowSeconds: z.number().int().min(1).max(86_400).optional(),
  /** With minReplicas 0: to zero after this long with no demand at all. Default 300. */
  idleSeconds: z.number().int().min(0).max(604_800).optional(),
  /** How long a proxy holds a call while the model wakes from zero. Default 300. */
  coldStartTimeoutSeconds: z.number().int().min(1).max(3_600).optional(),
  /** `external`: KEDA or an HPA writes replicas from the same metric; the operator leaves it alone. */
  writer: z.enum(autoscalerWriters).optional(),
});
export type AutoscalingSpec = z.infer<typeof autoscalingSchema>;

/** A fair queue per account in each proxy once every replica has perReplica calls (docs/autoscaling.md). */
export const queueSpecSchema = z.strictObject({
  perReplica: z.number().int().min(1).max(100_000),
  /** Calls waiting per proxy. Default 100. */
  maxQueued: z.number().int().min(1).max(100_000).optional(),
  /** Their request bytes per proxy. Default 16 MiB. */
  maxQueuedBytes: z.number().int().min(1).optional(),
  /** How long one call may wait. Default 30. */
  maxWaitSeconds: z.number().int().min(1).max(3_600).optional(),
});

/** vLLM's --max-loras / --max-lora-rank: memory reserved at start, so the base's owner sizes it. */
export const loraSpecSchema = z.strictObject({
  maxLoras: z.number().int().min(1).max(256).optional(),
  maxLoraRank: z.number().int().min(1).max(512).optional(),
});

/** A Model served as a LoRA adapter on another Model's engine pods (operator/adapters/plan.ts). */
export const adapterSpecSchema = z.strictObject({
  /** metadata.name of the base Model, in the same namespace. */
  base: z
    .string()
    .regex(/^[a-z]([-a-z0-9]*[a-z0-9])?$/)
    .max(57),
  /** vLLM's lora_path: a Hugging Face repo id or a path the base's engine can read. */
  source: z.string().min(1).max(1024),
});

/** spec.engine.tokenizer: a Hugging Face repo, org/name, optionally @revision (operator/tokenizer.ts). */
export const TOKENIZER_PATTERN =
  '^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*(@[A-Za-z0-9._/-]{1,128})?$';

export const engineSpecSchema = z.strictObject({
  type: z.enum(engineTypes),
  image: z.string().min(1).optional(),
  /** Weights to load (e.g. a Hugging Face repo); defaults to spec.id. */
  model: z.string().min(1).optional(),
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  env: z.array(envVarSchema).optional(),
  /** Whole Secrets / ConfigMaps as environment (a token never written into the Model). */
  envFrom: z.array(envFromSchema).max(16).optional(),
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
  /** Replicas follow demand (docs/autoscaling.md); absent: replicas stays what is written. */
  autoscaling: autoscalingSchema.optional(),
  queue: queueSpecSchema.optional(),
  /**
   * vLLM: the only hosts the engine may download image/audio/video URLs from
   * (--allowed-media-domains). Unset: any public host the proxy lets through (docs/security.md "Media URLs").
   */
  /** A profile of the chart's engines.resourceProfiles, `<name>:<count>` (placement.ts). */
  resourceProfile: z.string().regex(new RegExp(RESOURCE_PROFILE_PATTERN)).optional(),
  /** A one-off on top of the profile: more node labels, tolerations, another priority class. */
  scheduling: z
    .strictObject({
      nodeSelector: z.record(z.string(), z.string()).optional(),
      tolerations: z.array(tolerationSchema).max(16).optional(),
      priorityClassName: z.string().min(1).max(253).optional(),
    })
    .optional(),
  /**
   * Seconds an engine told to stop may keep generating for its in-flight streams (vLLM
   * --shutdown-timeout); the pod's termination grace covers it (operator/drain.ts).
   */
  drainSeconds: z.number().int().min(0).max(3600).optional(),
  /** Where the weights come from and whether they are loaded once onto a cache (operator/weights/). */
  weights: weightsSpecSchema.optional(),
  /** The size limit of the volume the engine downloads its weights into (operator/scratch.ts). */
  scratchSize: z
    .string()
    .regex(/^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$/)
    .optional(),
  /** How a new engine version replaces the old: the Deployment's rolling-update bounds. */
  rollout: z
    .strictObject({
      maxSurge: intOrPercent.optional(),
      maxUnavailable: intOrPercent.optional(),
    })
    .optional(),
  allowedMediaDomains: z
    .array(z.string().regex(/^[A-Za-z0-9.-]{1,253}$/, 'a host name such as images.example.com'))
    .max(64)
    .optional(),
  /** This engine hosts LoRA adapter Models (spec.adapter) loaded at runtime (operator/adapters/). */
  lora: loraSpecSchema.optional(),

  /** The Hugging Face repo (`org/name[@revision]`) whose tokenizer the proxies route with (operator/tokenizer.ts). */
  tokenizer: z.string().regex(new RegExp(TOKENIZER_PATTERN)).max(300).optional(),
});
export type EngineSpec = z.infer<typeof engineSpecSchema>;

export const modelSpecSchema = z.strictObject({
  id: z.string().min(1).max(256).regex(new RegExp(ID_PATTERN)),
  kind: z.enum(modelKinds),
  /** Other names that resolve to this model: exact, or a prefix ending in `*` (core/catalogue/aliases.ts). */
  aliases: z
    .array(z.string().min(1).max(256).regex(new RegExp(ALIAS_PATTERN)))
    .max(32)
    .optional(),
  /** The name the engine answers to (`model` in requests); defaults to id. */
  servedName: z.string().min(1).max(256).optional(),
  engine: engineSpecSchema.optional(),
  adapter: adapterSpecSchema.optional(),
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
  outputLimitPolicy: z.enum(['clamp', 'refuse']).optional(),
  promptBounds: z
    .strictObject({
      perImage: z.number().int().min(0).max(1_000_000).optional(),
      perMessage: z.number().int().min(0).max(10_000).optional(),
      perRequest: z.number().int().min(0).max(1_000_000).optional(),
    })
    .optional(),
  pricing: z.record(z.string(), priceSpecSchema).refine((p) => Object.keys(p).length > 0, 'needs a currency'),
  /** Batch lines pay each token rate less this percent (docs/batches.md); unset: the interactive price. */
  batchDiscountPercent: z.number().int().min(0).max(100).optional(),
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
