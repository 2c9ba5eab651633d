// A Model's spec, written once: zod validates it for the local runtime, and the CRD's OpenAPI
// schema the API server validates it with is generated from it (operator/model/crd/), with the
// descriptions `kubectl explain` shows. What only Kubernetes can say (CEL, int-or-string, map
// sizes) is metadata from ./model/kube-schema.ts. On its own so that the cross-field rules
// (./rules.ts) and the resource around it (./model.ts) can both read it.
import { z } from 'zod';
import { ALIAS_PATTERN } from '../../core/catalogue/aliases.ts';
import { availabilities, modelKinds } from '../../core/catalogue/entry.ts';
import { boundedRecord, celRule, int64, intOrString, transitionRule } from './kube-schema.ts';
import { weightsSpecSchema } from './weights.ts';

export const ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$';
/** `<profile>` or `<profile>:<count>` (operator/fleet/placement.ts); the count multiplies the profile. */
export const RESOURCE_PROFILE_PATTERN = '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[1-9][0-9]{0,2})?$';
/** A rollout's maxSurge / maxUnavailable: a pod count or a percentage, as a Deployment takes it. */
export const INT_OR_PERCENT_PATTERN = '^(0|[1-9][0-9]{0,3})%?$';
/** What core/money.ts parses exactly: at most nine decimals, the nano-unit. */
export const DECIMAL_PATTERN = '^(0|[1-9][0-9]*)(\\.[0-9]{1,9})?$';

const decimal = (description: string) =>
  z
    .string()
    .regex(new RegExp(DECIMAL_PATTERN), 'must be a non-negative decimal string, e.g. "0.15"')
    .max(32)
    .describe(description);
const quantityMap = boundedRecord(intOrString(), 16);

export const priceSpecSchema = z
  .strictObject({
    input: decimal('Per 1M input tokens (chat, embedding).').optional(),
    cachedInput: decimal('Per 1M cached input tokens, a subset of input (chat).').optional(),
    output: decimal('Per 1M output tokens (chat).').optional(),
    perImage: decimal('Per generated image (image).').optional(),
    perSecond: decimal('Per second of output video (video).').optional(),
  })
  .describe('Prices in one currency, as decimal strings. Text and embeddings: per 1M tokens.');
export type PriceSpec = z.infer<typeof priceSpecSchema>;

/** A key of a Secret or ConfigMap (env valueFrom). */
const keyRef = (what: string) =>
  z
    .strictObject({
      name: z.string().min(1).max(253),
      key: z.string().min(1).max(253),
      optional: z.boolean().optional(),
    })
    .describe(`A key of a ${what} in the Model's namespace.`);
/** A whole Secret or ConfigMap (envFrom). */
const named = (what: string) =>
  z
    .strictObject({ name: z.string().min(1).max(253), optional: z.boolean().optional() })
    .describe(`Every key of a ${what} in the Model's namespace.`);

/** A value, or one read from a Secret or ConfigMap key: credentials stay in Secrets. */
const envVarSchema = celRule(
  z.strictObject({
    name: z.string().min(1).max(256),
    value: z.string().max(32768).optional(),
    valueFrom: celRule(
      z
        .strictObject({
          secretKeyRef: keyRef('Secret').optional(),
          configMapKeyRef: keyRef('ConfigMap').optional(),
        })
        .describe('A credential stays in its Secret: the kubelet reads it, not the Model.'),
      {
        cel: 'has(self.secretKeyRef) != has(self.configMapKeyRef)',
        message: 'valueFrom needs one of secretKeyRef or configMapKeyRef',
        holds: (v) => (v.secretKeyRef === undefined) !== (v.configMapKeyRef === undefined),
      },
    ).optional(),
  }),
  {
    cel: '!(has(self.value) && has(self.valueFrom))',
    message: 'env: value or valueFrom, not both',
    holds: (e) => e.value === undefined || e.valueFrom === undefined,
  },
);
/** Whole Secrets / ConfigMaps as environment (a token never written into the Model). */
const envFromSchema = celRule(
  z.strictObject({
    prefix: z.string().max(253).optional(),
    secretRef: named('Secret').optional(),
    configMapRef: named('ConfigMap').optional(),
  }),
  {
    cel: 'has(self.secretRef) != has(self.configMapRef)',
    message: 'envFrom needs one of secretRef or configMapRef',
    holds: (e) => (e.secretRef === undefined) !== (e.configMapRef === undefined),
  },
);
const tolerationSchema = z.strictObject({
  key: z.string().max(316).optional(),
  operator: z.enum(['Exists', 'Equal']).optional(),
  value: z.string().max(63).optional(),
  effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
  tolerationSeconds: int64().optional(),
});
const intOrPercent = celRule(intOrString(), {
  cel: `type(self) == int ? self >= 0 : self.matches('${INT_OR_PERCENT_PATTERN}')`,
  message: 'a pod count (0 or more) or a percentage such as 25%',
  holds: (v) => (typeof v === 'number' ? v >= 0 : new RegExp(INT_OR_PERCENT_PATTERN).test(v)),
});

export const autoscalerWriters = ['operator', 'external'] as const;

export const autoscalingSchema = z
  .strictObject({
    targetInFlight: z
      .int32()
      .min(1)
      .max(100_000)
      .describe('Requests one replica is sized for (default 8).')
      .optional(),
    scaleDownDelaySeconds: z
      .int32()
      .min(0)
      .max(86_400)
      .describe('No scale-down sooner after a scale-up (default 30).')
      .optional(),
    windowSeconds: z
      .int32()
      .min(1)
      .max(86_400)
      .describe('Scale down to the highest recommendation of this window (default 60).')
      .optional(),
    idleSeconds: z
      .int32()
      .min(0)
      .max(604_800)
      .describe('With minReplicas 0: to zero after this long with no demand (default 300).')
      .optional(),
    coldStartTimeoutSeconds: z
      .int32()
      .min(1)
      .max(3_600)
      .describe('How long a proxy holds a call while the model wakes (default 300).')
      .optional(),
    writer: z
      .enum(autoscalerWriters)
      .describe('external: KEDA or an HPA writes replicas; the operator leaves it alone.')
      .optional(),
  })
  .describe('Replicas follow demand (docs/autoscaling.md); absent: replicas stays what is written.');
export type AutoscalingSpec = z.infer<typeof autoscalingSchema>;

export const queueSpecSchema = z
  .strictObject({
    perReplica: z.int32().min(1).max(100_000).describe('Calls one proxy sends to one replica at once.'),
    maxQueued: z.int32().min(1).max(100_000).describe('Calls waiting per proxy (default 100).').optional(),
    maxQueuedBytes: z.int32().min(1).describe('Their request bytes per proxy (default 16 MiB).').optional(),
    maxWaitSeconds: z
      .int32()
      .min(1)
      .max(3_600)
      .describe('How long one call may wait (default 30).')
      .optional(),
  })
  .describe('A fair queue per account in each proxy once every replica has perReplica calls.');

/** vLLM's --max-loras / --max-lora-rank: memory reserved at start, so the base's owner sizes it. */
export const loraSpecSchema = z
  .strictObject({
    maxLoras: z.int32().min(1).max(256).describe('vLLM --max-loras: adapters in one batch.').optional(),
    maxLoraRank: z.int32().min(1).max(512).describe('vLLM --max-lora-rank.').optional(),
  })
  .describe(
    'This engine hosts adapter Models (vLLM --enable-lora, runtime loading). Set on the base before its first adapter: changing it restarts the pods.',
  );

/** A Model served as a LoRA adapter on another Model's engine pods (operator/adapters/plan.ts). */
export const adapterSpecSchema = z
  .strictObject({
    base: z
      .string()
      .regex(/^[a-z]([-a-z0-9]*[a-z0-9])?$/)
      .max(57)
      .describe('metadata.name of the base Model in this namespace; its engine needs spec.engine.lora.'),
    source: z
      .string()
      .min(1)
      .max(1024)
      .describe("vLLM's lora_path: a Hugging Face repo id or a path the base's engine can read."),
  })
  .describe(
    "A LoRA adapter served on another Model's engine pods (loaded at runtime), catalogued under this Model's own id and prices. No engine or external of its own.",
  );

/** spec.engine.tokenizer: a Hugging Face repo, org/name, optionally @revision (operator/reconcile/tokenizer.ts). */
export const TOKENIZER_PATTERN =
  '^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*(@[A-Za-z0-9._/-]{1,128})?$';

export const engineSpecSchema = z
  .strictObject({
    // One of the engine kinds' names: operator/engines/ holds them (a kind is one file there), and
    // model/ is below it, so the CRD's enum and parseModel take the names from the caller.
    type: z.string(),
    image: z
      .string()
      .min(1)
      .max(512)
      .describe('Container image; each engine type has a default, custom needs one.')
      .optional(),
    model: z
      .string()
      .min(1)
      .max(512)
      .describe('Weights to load (e.g. a Hugging Face repo); defaults to spec.id.')
      .optional(),
    command: z.array(z.string().max(4096)).max(64).optional(),
    args: z.array(z.string().max(4096)).max(128).describe('Extra engine arguments.').optional(),
    env: z.array(envVarSchema).max(64).optional(),
    envFrom: z.array(envFromSchema).max(16).optional(),
    port: z.int32().min(1).max(65535).describe('Port the engine listens on.').optional(),
    gpus: z.int32().min(0).max(64).describe('nvidia.com/gpu per replica.').optional(),
    resources: z
      .strictObject({ requests: quantityMap.optional(), limits: quantityMap.optional() })
      .optional(),
    replicas: z.int32().min(0).describe('Desired replicas (the scale subresource writes this).').optional(),
    minReplicas: z.int32().min(0).optional(),
    maxReplicas: z.int32().min(0).optional(),
    // operator/fleet/placement.ts
    resourceProfile: z
      .string()
      .regex(new RegExp(RESOURCE_PROFILE_PATTERN))
      .max(128)
      .describe(
        'A profile of the chart values engines.resourceProfiles, as <name>:<count>; resources (times the count), node selector, tolerations of the engine pods.',
      )
      .optional(),
    scheduling: z
      .strictObject({
        nodeSelector: boundedRecord(z.string().max(63), 16).optional(),
        tolerations: z.array(tolerationSchema).max(16).optional(),
        priorityClassName: z.string().min(1).max(253).optional(),
      })
      .describe('A one-off on top of the profile: more node labels, tolerations, another priority class.')
      .optional(),
    // The pod's termination grace covers it (operator/fleet/drain.ts).
    drainSeconds: z
      .int32()
      .min(0)
      .max(3600)
      .describe(
        'Seconds a stopping engine keeps generating for its in-flight streams (vLLM --shutdown-timeout); default 40.',
      )
      .optional(),
    // operator/fleet/scratch.ts
    scratchSize: z
      .string()
      .regex(/^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$/)
      .max(32)
      .describe(
        'Size limit of the scratch volume the engine downloads its weights into (default 200Gi); past it the pod is evicted, not the node filled.',
      )
      .optional(),
    rollout: z
      .strictObject({ maxSurge: intOrPercent.optional(), maxUnavailable: intOrPercent.optional() })
      .describe("The Deployment's rolling-update bounds for a new engine version.")
      .optional(),
    autoscaling: autoscalingSchema.optional(),
    queue: queueSpecSchema.optional(),
    // operator/weights/
    weights: transitionRule(weightsSpecSchema, {
      cel: 'self == oldSelf',
      message: 'spec.engine.weights is immutable (the cache is keyed by the Model): create a new Model',
    }).optional(),
    // operator/adapters/
    lora: loraSpecSchema.optional(),
    // docs/security.md "Media URLs"
    allowedMediaDomains: z
      .array(
        z
          .string()
          .regex(/^[A-Za-z0-9.-]{1,253}$/, 'a host name such as images.example.com')
          .max(253),
      )
      .max(64)
      .describe(
        'vLLM: the only hosts the engine may download media URLs from (--allowed-media-domains). Unset: any public host the proxy lets through.',
      )
      .optional(),
    // operator/reconcile/tokenizer.ts
    tokenizer: z
      .string()
      .regex(new RegExp(TOKENIZER_PATTERN))
      .max(300)
      .describe(
        'vLLM: the Hugging Face repo (org/name, optionally @revision) whose tokenizer.json and tokenizer_config.json the proxies fetch to route by prefix cache. Default: the weights’ huggingFace repo, or engine.model when it names a repo.',
      )
      .optional(),
  })
  .describe('The inference engine the operator deploys. Exactly one of engine or external.');
export type EngineSpec = z.infer<typeof engineSpecSchema>;

export const modelSpecSchema = z.strictObject({
  id: transitionRule(
    z
      .string()
      .min(1)
      .max(256)
      .regex(new RegExp(ID_PATTERN))
      .describe('Catalogue id, canonical spelling; may contain "/". Matched case-insensitively.'),
    { cel: 'self == oldSelf', message: 'spec.id is immutable: create a new Model' },
  ),
  kind: z.enum(modelKinds),
  // core/catalogue/aliases.ts
  aliases: z
    .array(z.string().min(1).max(256).regex(new RegExp(ALIAS_PATTERN)))
    .max(32)
    .describe(
      'Other names that resolve to this model (names clients hard-code): exact, or a prefix ending in "*". Case-insensitive; billed and answered as id. An alias another Model already holds, or equal to another id, is dropped (condition AliasConflict).',
    )
    .optional(),
  // `model` in the requests the engine is sent.
  servedName: z.string().min(1).max(256).describe('Name the engine answers to; defaults to id.').optional(),
  engine: engineSpecSchema.optional(),
  adapter: adapterSpecSchema.optional(),
  external: z
    .strictObject({
      // The pattern before url(): zod's JSON Schema keeps `format: uri` only in this order.
      url: z
        .string()
        .regex(/^https?:\/\//)
        .url()
        .max(2048),
    })
    .describe('An OpenAI-compatible engine that already runs elsewhere.')
    .optional(),
  contextLength: z.int32().min(1).optional(),
  maxOutputTokens: z.int32().min(1).optional(),
  outputLimitPolicy: z
    .enum(['clamp', 'refuse'])
    .describe(
      'A request asking more output than maxOutputTokens (else contextLength): clamp (default) serves it at the limit, with header x-modelplane-output-clamped; refuse answers 400 naming the field.',
    )
    .optional(),
  promptBounds: z
    .strictObject({
      perImage: z
        .int32()
        .min(0)
        .max(1_000_000)
        .describe("Tokens one image can take (a vision model's largest tiling).")
        .optional(),
      perMessage: z
        .int32()
        .min(0)
        .max(10_000)
        .describe("The chat template's tokens around each message.")
        .optional(),
      perRequest: z
        .int32()
        .min(0)
        .max(1_000_000)
        .describe("The template's tokens once per request.")
        .optional(),
    })
    .describe(
      'Upper bounds, in tokens, of what a prompt costs beyond its text; the proxy holds credits for them. Unset: the proxy defaults (perImage 4096, perMessage 8, perRequest 64).',
    )
    .optional(),
  pricing: boundedRecord(priceSpecSchema, 32, { count: 1, message: 'needs a currency' }).describe(
    'Currency (ISO 4217, e.g. USD) → price. Unpriced currencies do not see the model.',
  ),
  // docs/batches.md
  batchDiscountPercent: z
    .int32()
    .min(0)
    .max(100)
    .describe(
      'Batches (/v1/batches, /v1/messages/batches) pay each token rate less this percent (chat, embedding); unset: the interactive price.',
    )
    .optional(),
  // The API server writes the defaults into the stored Model; the local runtime reads an absent
  // field as the same (operator/reconcile/entry.ts).
  availability: z.enum(availabilities).meta({ default: 'available' }).optional(),
  region: z.string().min(1).max(64).meta({ default: 'global' }).optional(),
  tags: z.array(z.string().min(1).max(64)).max(32).optional(),
  capabilities: z
    .strictObject({
      tools: z.boolean().describe('Chat: tool calling.').optional(),
      vision: z.boolean().describe('Chat: image input.').optional(),
      reasoning: z
        .boolean()
        .describe('Chat: thinks before answering (vLLM --reasoning-parser); Messages `thinking` needs it.')
        .optional(),
      edit: z.boolean().describe('Image: POST /v1/images/edits.').optional(),
      imageToVideo: z.boolean().describe('Video: start from an image.').optional(),
    })
    .optional(),
  ownedBy: z.string().min(1).max(64).optional(),
});
export type ModelSpec = z.infer<typeof modelSpecSchema>;
