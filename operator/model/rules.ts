// Cross-field rules of a Model, written once: the CEL text goes into the CRD (so `kubectl apply`
// rejects a bad object) and `holds` runs the same rule in TypeScript for the local runtime, which
// has no API server to ask. The message is identical in both places, and a test keeps them paired.
// The rules of one engine kind are in its file (operator/engines/, above model/): the CRD and
// parseModel take them, with the kinds' names, as a ModelEngines.
import type { ModelSpec } from './spec.ts';

export interface ModelRule {
  /** CEL evaluated with `self` = the Model's spec. */
  cel: string;
  message: string;
  holds(spec: ModelSpec): boolean;
}

type PriceField = 'input' | 'cachedInput' | 'output' | 'perImage' | 'perSecond';
const tokenFields: PriceField[] = ['input', 'cachedInput', 'output'];

/** Every currency's price has all of `need` and none of `forbid` (CEL: has() on each). */
function pricedAs(need: PriceField, forbid: PriceField[]) {
  const celForbid = forbid.map((f) => ` && !has(self.pricing[c].${f})`).join('');
  return {
    cel: `self.pricing.all(c, has(self.pricing[c].${need})${celForbid})`,
    holds: (spec: ModelSpec) =>
      Object.values(spec.pricing).every(
        (p) => p[need] !== undefined && forbid.every((f) => p[f] === undefined),
      ),
  };
}

const tokenPriced = pricedAs('input', ['perImage', 'perSecond']);
const imagePriced = pricedAs('perImage', [...tokenFields, 'perSecond']);
const videoPriced = pricedAs('perSecond', [...tokenFields, 'perImage']);

export const specRules: ModelRule[] = [
  {
    cel: "has(self.adapter) || has(self.engine) != has(self.external) || (!has(self.engine) && has(self.availability) && self.availability == 'comingSoon')",
    message: 'set exactly one of spec.engine or spec.external (a comingSoon model may have neither)',
    holds: (s) =>
      s.adapter !== undefined ||
      (s.engine === undefined) !== (s.external === undefined) ||
      (s.engine === undefined && s.availability === 'comingSoon'),
  },
  {
    cel: '!has(self.adapter) || (!has(self.engine) && !has(self.external))',
    message: "spec.adapter runs on its base's engine: no spec.engine or spec.external of its own",
    holds: (s) => s.adapter === undefined || (s.engine === undefined && s.external === undefined),
  },
  {
    cel: "!has(self.adapter) || self.kind == 'chat'",
    message: 'spec.adapter (a LoRA adapter) applies to chat models only',
    holds: (s) => s.adapter === undefined || s.kind === 'chat',
  },
  {
    cel: `!(self.kind in ['chat', 'embedding']) || ${tokenPriced.cel}`,
    message:
      'chat and embedding models are priced per token: each spec.pricing.<currency> needs input (and optionally cachedInput, output), not perImage or perSecond',
    holds: (s) => !(s.kind === 'chat' || s.kind === 'embedding') || tokenPriced.holds(s),
  },
  {
    cel: `self.kind != 'image' || ${imagePriced.cel}`,
    message:
      'image models are priced per image: each spec.pricing.<currency> needs perImage and nothing else',
    holds: (s) => s.kind !== 'image' || imagePriced.holds(s),
  },
  {
    cel: `self.kind != 'video' || ${videoPriced.cel}`,
    message:
      'video models are priced per second of output: each spec.pricing.<currency> needs perSecond and nothing else',
    holds: (s) => s.kind !== 'video' || videoPriced.holds(s),
  },
  {
    cel: "self.pricing.all(c, c.matches('^[A-Z]{3}$'))",
    message: 'spec.pricing keys are ISO 4217 currency codes in upper case, e.g. USD',
    holds: (s) => Object.keys(s.pricing).every((c) => /^[A-Z]{3}$/.test(c)),
  },
  {
    cel: "!has(self.capabilities) || !has(self.capabilities.edit) || !self.capabilities.edit || self.kind == 'image'",
    message: 'spec.capabilities.edit applies to image models only',
    holds: (s) => !s.capabilities?.edit || s.kind === 'image',
  },
  {
    cel: "!has(self.capabilities) || !has(self.capabilities.imageToVideo) || !self.capabilities.imageToVideo || self.kind == 'video'",
    message: 'spec.capabilities.imageToVideo applies to video models only',
    holds: (s) => !s.capabilities?.imageToVideo || s.kind === 'video',
  },
  {
    cel: "!has(self.capabilities) || !has(self.capabilities.tools) || !self.capabilities.tools || self.kind == 'chat'",
    message: 'spec.capabilities.tools applies to chat models only',
    holds: (s) => !s.capabilities?.tools || s.kind === 'chat',
  },
  {
    cel: "!has(self.capabilities) || !has(self.capabilities.reasoning) || !self.capabilities.reasoning || self.kind == 'chat'",
    message: 'spec.capabilities.reasoning applies to chat models only',
    holds: (s) => !s.capabilities?.reasoning || s.kind === 'chat',
  },
  {
    cel: '!has(self.engine) || !has(self.engine.minReplicas) || !has(self.engine.maxReplicas) || self.engine.minReplicas <= self.engine.maxReplicas',
    message: 'spec.engine.minReplicas must not exceed spec.engine.maxReplicas',
    holds: (s) =>
      s.engine?.minReplicas === undefined ||
      s.engine.maxReplicas === undefined ||
      s.engine.minReplicas <= s.engine.maxReplicas,
  },
  {
    cel: '!has(self.engine) || !has(self.engine.gpus) || !has(self.engine.resourceProfile)',
    message:
      'set spec.engine.gpus or spec.engine.resourceProfile, not both (the profile grants the GPUs, times its count)',
    holds: (s) => s.engine?.gpus === undefined || s.engine.resourceProfile === undefined,
  },
  {
    cel: '!has(self.engine) || !has(self.engine.autoscaling) || has(self.engine.maxReplicas)',
    message: 'spec.engine.autoscaling needs spec.engine.maxReplicas (the most GPUs it may take)',
    holds: (s) => s.engine?.autoscaling === undefined || s.engine.maxReplicas !== undefined,
  },
  {
    cel: '!has(self.engine) || !has(self.engine.weights) || [has(self.engine.weights.source.huggingFace), has(self.engine.weights.source.pvc), has(self.engine.weights.source.s3)].filter(x, x).size() == 1',
    message: 'spec.engine.weights.source needs exactly one of huggingFace, pvc or s3',
    holds: (s) => {
      const src = s.engine?.weights?.source;
      return !src || [src.huggingFace, src.pvc, src.s3].filter((x) => x !== undefined).length === 1;
    },
  },
  {
    cel: '!has(self.engine) || !has(self.engine.weights) || !has(self.engine.model)',
    message: 'set spec.engine.model or spec.engine.weights, not both (weights names the source)',
    holds: (s) => s.engine?.weights === undefined || s.engine.model === undefined,
  },
  {
    cel: '!has(self.engine) || !has(self.engine.weights) || !has(self.engine.weights.source.s3) || has(self.engine.weights.cacheProfile)',
    message:
      'weights from s3 need spec.engine.weights.cacheProfile (a loader Job copies them onto the cache)',
    holds: (s) => s.engine?.weights?.source.s3 === undefined || s.engine.weights.cacheProfile !== undefined,
  },
  {
    cel: '!has(self.maxOutputTokens) || !has(self.contextLength) || self.maxOutputTokens <= self.contextLength',
    message: 'spec.maxOutputTokens must not exceed spec.contextLength',
    holds: (s) =>
      s.maxOutputTokens === undefined ||
      s.contextLength === undefined ||
      s.maxOutputTokens <= s.contextLength,
  },
];

/** metadata.name becomes `model-<name>` for the Deployment and Service: a DNS label of ≤ 63. */
export const nameRule = {
  cel: "size(self.metadata.name) <= 57 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
  message:
    'metadata.name must be a DNS label of at most 57 characters (lower case, digits, -; starting with a letter)',
  holds: (name: string) => name.length <= 57 && /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(name),
};

/** What a Model's validation takes from the engine kinds: their names (spec.engine.type) and rules. */
export interface ModelEngines {
  types: readonly string[];
  rules: readonly ModelRule[];
}

/** Every rule a spec is held to: the Model's own, then its engine kinds'. */
export const allRules = (engines: ModelEngines): ModelRule[] => [...specRules, ...engines.rules];

export function specProblems(spec: ModelSpec, engines: ModelEngines): string[] {
  return allRules(engines)
    .filter((r) => !r.holds(spec))
    .map((r) => r.message);
}
