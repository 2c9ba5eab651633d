// The Model CRD's adapter fields (issue 31 "Adapters"): spec.adapter on a LoRA adapter Model and
// spec.engine.lora on the base that hosts adapters, kept apart from operator/crd.ts. Bounds mirror
// model-spec.ts (adapterSpecSchema, loraSpecSchema).
import { int, type Schema, str } from './crd-schema.ts';

/** spec.adapter. */
export const adapterProperty: Schema = {
  type: 'object',
  required: ['base', 'source'],
  description:
    "A LoRA adapter served on another Model's engine pods (loaded at runtime), catalogued under this Model's own id and prices. No engine or external of its own.",
  properties: {
    base: str({
      description: 'metadata.name of the base Model in this namespace; its engine needs spec.engine.lora.',
      pattern: '^[a-z]([-a-z0-9]*[a-z0-9])?$',
      maxLength: 57,
    }),
    source: str({
      description: "vLLM's lora_path: a Hugging Face repo id or a path the base's engine can read.",
      minLength: 1,
      maxLength: 1024,
    }),
  },
};

/** spec.engine.lora. */
export const engineLoraProperty: Schema = {
  type: 'object',
  description:
    'This engine hosts adapter Models (vLLM --enable-lora, runtime loading). Set on the base before its first adapter: changing it restarts the pods.',
  properties: {
    maxLoras: int({ minimum: 1, maximum: 256, description: 'vLLM --max-loras: adapters in one batch.' }),
    maxLoraRank: int({ minimum: 1, maximum: 512, description: 'vLLM --max-lora-rank.' }),
  },
};
