// A Model's spec as zod sees it (mirroring the CRD's OpenAPI schema), on its own so that the
// cross-field rules (./rules.ts) and the resource around it (./model.ts) can both read it.
import { z } from 'zod';
import { availabilities, modelKinds } from '../core/catalogue/entry.ts';
import { isDecimalString } from '../core/money.ts';

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
   * (--allowed-media-domains). Unset: any public host the proxy lets through (docs/security.md "Media URLs").
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
  outputLimitPolicy: z.enum(['clamp', 'refuse']).optional(),
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
