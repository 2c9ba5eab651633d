// The Model CRD, source of truth for crds/model.yaml: `npx tsx operator/crd.ts > crds/model.yaml`.
// crd.test.ts fails when the committed YAML drifts from this. Field bounds mirror model.ts; the
// cross-field CEL rules come from rules.ts so the API server and the local runtime agree.
import { pathToFileURL } from 'node:url';
import { stringify } from 'yaml';
import { availabilities, modelKinds } from '../core/catalogue/entry.ts';
import { DECIMAL_PATTERN, engineTypes, GROUP, ID_PATTERN, PLURAL, VERSION } from './model.ts';
import { idImmutableRule, nameRule, specRules } from './rules.ts';

type Schema = Record<string, unknown>;
const str = (extra: Schema = {}): Schema => ({ type: 'string', ...extra });
const int = (extra: Schema = {}): Schema => ({ type: 'integer', format: 'int32', ...extra });
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
        properties: { name: str({ minLength: 1, maxLength: 256 }), value: str({ maxLength: 32768 }) },
      },
    },
    port: int({ minimum: 1, maximum: 65535, description: 'Port the engine listens on.' }),
    gpus: int({ minimum: 0, maximum: 64, description: 'nvidia.com/gpu per replica.' }),
    resources: { type: 'object', properties: { requests: quantityMap, limits: quantityMap } },
    replicas: int({ minimum: 0, description: 'Desired replicas (the scale subresource writes this).' }),
    minReplicas: int({ minimum: 0 }),
    maxReplicas: int({ minimum: 0 }),
    allowedMediaDomains: {
      type: 'array',
      maxItems: 64,
      items: str({ pattern: '^[A-Za-z0-9.-]{1,253}$', maxLength: 253 }),
      description:
        'vLLM: the only hosts the engine may download media URLs from (--allowed-media-domains). Unset: any public host the proxy lets through.',
    },
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
    servedName: str({
      description: 'Name the engine answers to; defaults to id.',
      minLength: 1,
      maxLength: 256,
    }),
    engine,
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
