// Test fixtures shared by the unit tests (no cluster) and the integration tests (real API server):
// one table of invalid Models, each with the message both validators must give.

import type { BasePod } from './adapters/plan.ts';
import { API_VERSION, type Model, type ModelSpec } from './model/model.ts';

export function chatModel(name = 'llama', spec: Partial<ModelSpec> = {}): Model {
  return {
    apiVersion: API_VERSION,
    kind: 'Model',
    metadata: { name, namespace: 'default' },
    spec: {
      id: 'Meta-Llama/Llama-3.1-8B-Instruct',
      kind: 'chat',
      engine: { type: 'simulator' },
      contextLength: 131072,
      pricing: {
        USD: { input: '0.15', cachedInput: '0.075', output: '0.60' },
        EUR: { input: '0.14', output: '0.55' },
      },
      capabilities: { tools: true },
      ...spec,
    },
  };
}

export interface InvalidCase {
  name: string;
  spec: Partial<ModelSpec> & Record<string, unknown>;
  /** Part of the message both the CRD's CEL rule and parseModel report. */
  message: string;
}

export const invalidModels: InvalidCase[] = [
  {
    name: 'chat priced per image',
    spec: { pricing: { USD: { perImage: '0.04' } } },
    message: 'chat and embedding models are priced per token',
  },
  {
    name: 'embedding priced per second',
    spec: { kind: 'embedding', capabilities: {}, pricing: { USD: { input: '0.02', perSecond: '0.1' } } },
    message: 'chat and embedding models are priced per token',
  },
  {
    name: 'image priced per token',
    spec: { kind: 'image', capabilities: {}, pricing: { USD: { input: '1' } } },
    message: 'image models are priced per image',
  },
  {
    name: 'video priced per image',
    spec: { kind: 'video', capabilities: {}, pricing: { USD: { perImage: '1' } } },
    message: 'video models are priced per second of output',
  },
  {
    name: 'min replicas above max',
    spec: { engine: { type: 'simulator', minReplicas: 3, maxReplicas: 1 } },
    message: 'spec.engine.minReplicas must not exceed spec.engine.maxReplicas',
  },
  {
    name: 'autoscaling without maxReplicas',
    spec: { engine: { type: 'simulator', autoscaling: { targetInFlight: 4 } } },
    message: 'spec.engine.autoscaling needs spec.engine.maxReplicas',
  },
  {
    name: 'neither engine nor external',
    spec: { engine: undefined },
    message: 'set exactly one of spec.engine or spec.external',
  },
  {
    name: 'both engine and external',
    spec: { external: { url: 'https://api.example.com' } },
    message: 'set exactly one of spec.engine or spec.external',
  },
  {
    name: 'an adapter with an engine of its own',
    spec: { adapter: { base: 'llama', source: 'org/tone-lora' } },
    message: "spec.adapter runs on its base's engine",
  },
  {
    name: 'an embedding adapter',
    spec: {
      engine: undefined,
      kind: 'embedding',
      capabilities: {},
      adapter: { base: 'llama', source: 'org/tone-lora' },
      pricing: { USD: { input: '0.02' } },
    },
    message: 'spec.adapter (a LoRA adapter) applies to chat models only',
  },
  {
    name: 'lora on an sglang engine',
    spec: { engine: { type: 'sglang', lora: { maxLoras: 2 } } },
    message: 'spec.engine.lora needs a vllm (or simulator) engine',
  },
  {
    name: 'lower-case currency',
    spec: { pricing: { usd: { input: '1' } } },
    message: 'spec.pricing keys are ISO 4217 currency codes',
  },
  {
    name: 'edit on a chat model',
    spec: { capabilities: { edit: true } },
    message: 'spec.capabilities.edit applies to image models only',
  },
  {
    name: 'custom engine without image',
    spec: { engine: { type: 'custom' } },
    message: 'a custom engine needs spec.engine.image',
  },
  {
    name: 'output budget above context',
    spec: { contextLength: 1000, maxOutputTokens: 2000 },
    message: 'spec.maxOutputTokens must not exceed spec.contextLength',
  },
  {
    name: 'weights from two sources',
    spec: {
      engine: {
        type: 'vllm',
        weights: { source: { huggingFace: { repo: 'a/b' }, pvc: { claimName: 'w' } }, cacheProfile: 'nfs' },
      },
    },
    message: 'spec.engine.weights.source needs exactly one of huggingFace, pvc or s3',
  },
  {
    name: 'weights and engine.model',
    spec: { engine: { type: 'vllm', model: 'a/b', weights: { source: { huggingFace: { repo: 'a/b' } } } } },
    message: 'set spec.engine.model or spec.engine.weights, not both',
  },
  {
    name: 's3 weights without a cache profile',
    spec: {
      engine: {
        type: 'vllm',
        weights: { source: { s3: { url: 's3://bucket/w', credentialsSecret: { name: 'c' } } } },
      },
    },
    message: 'weights from s3 need spec.engine.weights.cacheProfile',
  },
  {
    name: 'llama.cpp weights from a claim without a file',
    spec: { engine: { type: 'llamacpp', weights: { source: { pvc: { claimName: 'w' } } } } },
    message: 'llama.cpp loads one GGUF file',
  },
  // Rules on one field rather than the spec (model-spec.ts, model/kube-schema.ts celRule).
  {
    name: 'an env var with a value and a valueFrom',
    spec: {
      engine: {
        type: 'simulator',
        env: [{ name: 'A', value: 'x', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }],
      },
    },
    message: 'env: value or valueFrom, not both',
  },
  {
    name: 'an env valueFrom naming no key',
    spec: { engine: { type: 'simulator', env: [{ name: 'A', valueFrom: {} }] } },
    message: 'valueFrom needs one of secretKeyRef or configMapKeyRef',
  },
  {
    name: 'an envFrom naming a Secret and a ConfigMap',
    spec: {
      engine: { type: 'simulator', envFrom: [{ secretRef: { name: 'a' }, configMapRef: { name: 'b' } }] },
    },
    message: 'envFrom needs one of secretRef or configMapRef',
  },
  {
    name: 'a maxSurge that is neither a count nor a percentage',
    spec: { engine: { type: 'simulator', rollout: { maxSurge: '25x' } } },
    message: 'a pod count (0 or more) or a percentage such as 25%',
  },
  {
    name: 'a negative maxUnavailable',
    spec: { engine: { type: 'simulator', rollout: { maxUnavailable: -1 } } },
    message: 'a pod count (0 or more) or a percentage such as 25%',
  },
];

export interface OutOfBoundsCase {
  name: string;
  spec: InvalidCase['spec'];
  /** The field both validators name, as the API server writes it (`env[0].value`). */
  field: string;
}

/**
 * One field past a bound, refused by both validators since the CRD is generated from the zod
 * schema. Each is a place where the two hand-written schemas disagreed: a bound only the CRD had
 * (the local runtime took the Model, the cluster refused it) or one only zod had (the other way).
 */
export const outOfBounds: OutOfBoundsCase[] = [
  {
    name: 'an image name of 513 characters (was the CRD only)',
    spec: { engine: { type: 'simulator', image: `r/${'x'.repeat(511)}` } },
    field: 'spec.engine.image',
  },
  {
    name: 'an empty image name (was zod only)',
    spec: { engine: { type: 'simulator', image: '' } },
    field: 'spec.engine.image',
  },
  {
    name: '129 engine args (was the CRD only)',
    spec: { engine: { type: 'simulator', args: Array.from({ length: 129 }, () => '-v') } },
    field: 'spec.engine.args',
  },
  {
    name: 'an env value of 32769 characters (was the CRD only)',
    spec: { engine: { type: 'simulator', env: [{ name: 'A', value: 'x'.repeat(32769) }] } },
    field: 'spec.engine.env[0].value',
  },
  {
    name: 'a fractional quantity written as a number (was the CRD only: int-or-string)',
    spec: { engine: { type: 'simulator', resources: { requests: { cpu: 0.5 } } } },
    field: 'spec.engine.resources.requests.cpu',
  },
  {
    name: 'a nodeSelector of 17 labels (was the CRD only)',
    spec: {
      engine: {
        type: 'simulator',
        scheduling: {
          nodeSelector: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`l${i}`, 'x'])),
        },
      },
    },
    field: 'spec.engine.scheduling.nodeSelector',
  },
  {
    name: 'a price of 33 characters (was the CRD only)',
    spec: { pricing: { USD: { input: '1'.repeat(33) } } },
    field: 'spec.pricing.USD.input',
  },
  {
    name: 'replicas past int32 (was the CRD only: its format int32)',
    spec: { engine: { type: 'simulator', replicas: 2 ** 31 } },
    field: 'spec.engine.replicas',
  },
  {
    name: 'an empty region (was zod only)',
    spec: { region: '' },
    field: 'spec.region',
  },
  {
    name: 'an external url that is no URL (was zod only)',
    spec: { engine: undefined, external: { url: 'http://exa mple.com' } },
    field: 'spec.external.url',
  },
];

/** A valid chat model with `spec` merged over it (undefined removes a field). */
export function withSpec(base: Model, spec: InvalidCase['spec']): Model {
  const merged = { ...base.spec, ...spec } as Record<string, unknown>;
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
  return { ...base, spec: merged as unknown as ModelSpec };
}

/** A ready pod of an adapter's base, at http://<name>:8000, listing `loaded` (operator/adapters/). */
export const basePod = (name: string, loaded: string[] = [], more: Partial<BasePod> = {}): BasePod => ({
  name,
  url: `http://${name}:8000`,
  ready: true,
  terminating: false,
  loaded,
  ...more,
});
