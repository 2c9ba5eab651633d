// The Model CRD, source of truth for crds/model.yaml: `npx tsx operator/crd.ts > crds/model.yaml`.
// The chart carries a copy (charts/modelplane/crds/; helm warns on symlinks): cp it after. crd.test.ts
// fails when either committed YAML drifts from this. Field bounds mirror model.ts; the
// cross-field CEL rules come from rules.ts so the API server and the local runtime agree.
import { pathToFileURL } from 'node:url';
import { stringify } from 'yaml';
import { availabilities, modelKinds } from '../core/catalogue/entry.ts';
import { adapterProperty, engineLoraProperty } from './crd-adapter.ts';
import { aliasesProperty } from './crd-aliases.ts';
import { engineScalingProperties } from './crd-scaling.ts';
import { int, named, ref, type Schema, str } from './crd-schema.ts';
import { engineWeightsProperties, weightsColumn } from './crd-weights.ts';
import { DECIMAL_PATTERN, engineTypes, GROUP, ID_PATTERN, PLURAL, VERSION } from './model.ts';
import { INT_OR_PERCENT_PATTERN, RESOURCE_PROFILE_PATTERN, TOKENIZER_PATTERN } from './model-spec.ts';
import { idImmutableRule, nameRule, specRules } from './rules.ts';

const bool = (description: string): Schema => ({ type: 'boolean', description });
const decimal = (description: string): Schema =>
  str({ description, pattern: DECIMAL_PATTERN, maxLength: 32 });
const quantityMap: Schema = {
  type: 'object',
  maxProperties: 16,
  additionalProperties: {
    'x-kubernetes-int-or-string': true,
    anyOf: [{ type: 'integer' }, { type: 'string' }],
  },
};

const price: Schema = {
  type: 'object',
  description: 'Prices in one currency, as decimal strings. Text and embeddings: per 1M tokens.',
  properties: {
    input: decimal('Per 1M input tokens (chat, embedding).'),
    cachedInput: decimal('Per 1M cached input tokens, a subset of input (chat).'),
    output: decimal('Per 1M output tokens (chat).'),
    perImage: decimal('Per generated image (image).'),
    perSecond: decimal('Per second of output video (video).'),
  },
};

// A structural schema allows int-or-string only as this exact anyOf; the bounds go in CEL.
const intOrPercent: Schema = {
  'x-kubernetes-int-or-string': true,
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  'x-kubernetes-validations': [
    {
      rule: `type(self) == int ? self >= 0 : self.matches('${INT_OR_PERCENT_PATTERN}')`,
      message: 'a pod count (0 or more) or a percentage such as 25%',
    },
  ],
};
const toleration: Schema = {
  type: 'object',
  properties: {
    key: str({ maxLength: 316 }),
    operator: str({ enum: ['Exists', 'Equal'] }),
    value: str({ maxLength: 63 }),
    effect: str({ enum: ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] }),
    tolerationSeconds: { type: 'integer', format: 'int64' },
  },
};

const engine: Schema = {
  type: 'object',
  description: 'The inference engine the operator deploys. Exactly one of engine or external.',
  required: ['type'],
  properties: {
    type: str({ enum: [...engineTypes] }),
    image: str({
      description: 'Container image; each engine type has a default, custom needs one.',
      maxLength: 512,
    }),
    model: str({
      description: 'Weights to load (e.g. a Hugging Face repo); defaults to spec.id.',
      maxLength: 512,
    }),
    command: { type: 'array', maxItems: 64, items: str({ maxLength: 4096 }) },
    args: {
      type: 'array',
      maxItems: 128,
      items: str({ maxLength: 4096 }),
      description: 'Extra engine arguments.',
    },
    env: {
      type: 'array',
      maxItems: 64,
      items: {
        type: 'object',
        required: ['name'],
        properties: {
          name: str({ minLength: 1, maxLength: 256 }),
          value: str({ maxLength: 32768 }),
          valueFrom: {
            type: 'object',
            description: 'A credential stays in its Secret: the kubelet reads it, not the Model.',
            properties: { secretKeyRef: ref('Secret'), configMapKeyRef: ref('ConfigMap') },
            'x-kubernetes-validations': [
              {
                rule: 'has(self.secretKeyRef) != has(self.configMapKeyRef)',
                message: 'valueFrom needs one of secretKeyRef or configMapKeyRef',
              },
            ],
          },
        },
        'x-kubernetes-validations': [
          { rule: '!(has(self.value) && has(self.valueFrom))', message: 'env: value or valueFrom, not both' },
        ],
      },
    },
    envFrom: {
      type: 'array',
      maxItems: 16,
      items: {
        type: 'object',
        properties: {
          prefix: str({ maxLength: 253 }),
          secretRef: named('Secret'),
          configMapRef: named('ConfigMap'),
        },
        'x-kubernetes-validations': [
          {
            rule: 'has(self.secretRef) != has(self.configMapRef)',
            message: 'envFrom needs one of secretRef or configMapRef',
          },
        ],
      },
    },
    port: int({ minimum: 1, maximum: 65535, description: 'Port the engine listens on.' }),
    gpus: int({ minimum: 0, maximum: 64, description: 'nvidia.com/gpu per replica.' }),
    resources: { type: 'object', properties: { requests: quantityMap, limits: quantityMap } },
    replicas: int({ minimum: 0, description: 'Desired replicas (the scale subresource writes this).' }),
    minReplicas: int({ minimum: 0 }),
    maxReplicas: int({ minimum: 0 }),
    resourceProfile: str({
      pattern: RESOURCE_PROFILE_PATTERN,
      maxLength: 128,
      description:
        'A profile of the chart values engines.resourceProfiles, as <name>:<count>; resources (times the count), node selector, tolerations of the engine pods.',
    }),
    scheduling: {
      type: 'object',
      description: 'A one-off on top of the profile: more node labels, tolerations, another priority class.',
      properties: {
        nodeSelector: { type: 'object', maxProperties: 16, additionalProperties: str({ maxLength: 63 }) },
        tolerations: { type: 'array', maxItems: 16, items: toleration },
        priorityClassName: str({ minLength: 1, maxLength: 253 }),
      },
    },
    drainSeconds: int({
      minimum: 0,
      maximum: 3600,
      description:
        'Seconds a stopping engine keeps generating for its in-flight streams (vLLM --shutdown-timeout); default 40.',
    }),
    scratchSize: str({
      pattern: '^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$',
      maxLength: 32,
      description:
        'Size limit of the scratch volume the engine downloads its weights into (default 200Gi); past it the pod is evicted, not the node filled.',
    }),
    rollout: {
      type: 'object',
      description: "The Deployment's rolling-update bounds for a new engine version.",
      properties: { maxSurge: intOrPercent, maxUnavailable: intOrPercent },
    },
    ...engineScalingProperties,
    ...engineWeightsProperties,
    lora: engineLoraProperty,
    allowedMediaDomains: {
      type: 'array',
      maxItems: 64,
      items: str({ pattern: '^[A-Za-z0-9.-]{1,253}$', maxLength: 253 }),
      description:
        'vLLM: the only hosts the engine may download media URLs from (--allowed-media-domains). Unset: any public host the proxy lets through.',
    },
    tokenizer: str({
      pattern: TOKENIZER_PATTERN,
      maxLength: 300,
      description:
        'vLLM: the Hugging Face repo (org/name, optionally @revision) whose tokenizer.json and tokenizer_config.json the proxies fetch to route by prefix cache. Default: the weights’ huggingFace repo, or engine.model when it names a repo.',
    }),
  },
};

const spec: Schema = {
  type: 'object',
  required: ['id', 'kind', 'pricing'],
  properties: {
    id: str({
      description: 'Catalogue id, canonical spelling; may contain "/". Matched case-insensitively.',
      minLength: 1,
      maxLength: 256,
      pattern: ID_PATTERN,
      'x-kubernetes-validations': [{ rule: idImmutableRule.cel, message: idImmutableRule.message }],
    }),
    kind: str({ enum: [...modelKinds] }),
    aliases: aliasesProperty,
    servedName: str({
      description: 'Name the engine answers to; defaults to id.',
      minLength: 1,
      maxLength: 256,
    }),
    engine,
    adapter: adapterProperty,
    external: {
      type: 'object',
      description: 'An OpenAI-compatible engine that already runs elsewhere.',
      required: ['url'],
      properties: { url: str({ pattern: '^https?://', maxLength: 2048 }) },
    },
    contextLength: int({ minimum: 1 }),
    maxOutputTokens: int({ minimum: 1 }),
    outputLimitPolicy: str({
      enum: ['clamp', 'refuse'],
      description:
        'A request asking more output than maxOutputTokens (else contextLength): clamp (default) serves it at the limit, with header x-modelplane-output-clamped; refuse answers 400 naming the field.',
    }),
    promptBounds: {
      type: 'object',
      description:
        'Upper bounds, in tokens, of what a prompt costs beyond its text; the proxy holds credits for them. Unset: the proxy defaults (perImage 4096, perMessage 8, perRequest 64).',
      properties: {
        perImage: int({
          minimum: 0,
          maximum: 1_000_000,
          description: "Tokens one image can take (a vision model's largest tiling).",
        }),
        perMessage: int({
          minimum: 0,
          maximum: 10_000,
          description: "The chat template's tokens around each message.",
        }),
        perRequest: int({
          minimum: 0,
          maximum: 1_000_000,
          description: "The template's tokens once per request.",
        }),
      },
    },
    pricing: {
      type: 'object',
      description: 'Currency (ISO 4217, e.g. USD) → price. Unpriced currencies do not see the model.',
      minProperties: 1,
      maxProperties: 32,
      additionalProperties: price,
    },
    batchDiscountPercent: int({
      minimum: 0,
      maximum: 100,
      description:
        'Batches (/v1/batches, /v1/messages/batches) pay each token rate less this percent (chat, embedding); unset: the interactive price.',
    }),
    availability: str({ enum: [...availabilities], default: 'available' }),
    region: str({ maxLength: 64, default: 'global' }),
    tags: { type: 'array', maxItems: 32, items: str({ minLength: 1, maxLength: 64 }) },
    capabilities: {
      type: 'object',
      properties: {
        tools: bool('Chat: tool calling.'),
        vision: bool('Chat: image input.'),
        reasoning: bool(
          'Chat: thinks before answering (vLLM --reasoning-parser); Messages `thinking` needs it.',
        ),
        edit: bool('Image: POST /v1/images/edits.'),
        imageToVideo: bool('Video: start from an image.'),
      },
    },
    ownedBy: str({ maxLength: 64 }),
  },
  'x-kubernetes-validations': specRules.map((r) => ({ rule: r.cel, message: r.message })),
};

const condition: Schema = {
  type: 'object',
  required: ['type', 'status'],
  properties: {
    type: str(),
    status: str({ enum: ['True', 'False', 'Unknown'] }),
    reason: str(),
    message: str(),
    lastTransitionTime: str({ format: 'date-time' }),
    observedGeneration: { type: 'integer', format: 'int64' },
  },
};

const status: Schema = {
  type: 'object',
  properties: {
    observedGeneration: { type: 'integer', format: 'int64' },
    replicas: int(),
    readyReplicas: int(),
    selector: str(),
    endpoints: { type: 'array', items: str() },
    autoscaling: {
      type: 'object',
      description: "The scaler's last decision and its inputs.",
      properties: {
        desiredReplicas: int(),
        recommendation: int(),
        demand: int({ description: 'In flight + queued + held, summed over the proxies.' }),
        inFlight: int(),
        queued: int(),
        held: int(),
        saturated: { type: 'boolean' },
        reason: str(),
        lastScaleTime: str({ format: 'date-time' }),
        lastScaleUpTime: str({ format: 'date-time' }),
        lastDemandTime: str({ format: 'date-time' }),
      },
    },
    conditions: {
      type: 'array',
      items: condition,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    },
  },
};

export function modelCrd() {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${PLURAL}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: {
        plural: PLURAL,
        singular: 'model',
        kind: 'Model',
        listKind: 'ModelList',
        categories: ['modelplane'],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: {
            status: {},
            scale: {
              specReplicasPath: '.spec.engine.replicas',
              statusReplicasPath: '.status.replicas',
              labelSelectorPath: '.status.selector',
            },
          },
          additionalPrinterColumns: [
            { name: 'ID', type: 'string', jsonPath: '.spec.id' },
            { name: 'Kind', type: 'string', jsonPath: '.spec.kind' },
            { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
            { name: 'Replicas', type: 'integer', jsonPath: '.status.replicas' },
            { name: 'Available', type: 'integer', jsonPath: '.status.readyReplicas' },
            { name: 'Demand', type: 'integer', jsonPath: '.status.autoscaling.demand' },
            { name: 'Profile', type: 'string', jsonPath: '.spec.engine.resourceProfile' },
            weightsColumn,
            {
              name: 'Problem',
              type: 'string',
              jsonPath: '.status.conditions[?(@.type=="Degraded")].reason',
              priority: 1,
            },
            { name: 'Scaling', type: 'string', jsonPath: '.status.autoscaling.reason', priority: 1 },
            // An adapter Model (spec.adapter): the Model whose pods serve it.
            { name: 'Base', type: 'string', jsonPath: '.spec.adapter.base', priority: 1 },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: 'A model served by modelplane: its engine, prices and catalogue entry.',
              required: ['spec'],
              properties: {
                apiVersion: str(),
                kind: str(),
                metadata: { type: 'object' },
                spec,
                status,
              },
              'x-kubernetes-validations': [{ rule: nameRule.cel, message: nameRule.message }],
            },
          },
        },
      ],
    },
  };
}

export function modelCrdYaml(): string {
  return `# Generated by operator/crd.ts — do not edit; run: npx tsx operator/crd.ts > crds/model.yaml\n${stringify(
    modelCrd(),
    { lineWidth: 0 },
  )}`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.stdout.write(modelCrdYaml());
