// The catalogue entry: the contract between the operator (writer) and the proxy and console
// (readers). Prices are decimal strings in currency units, exactly as written in the Model CR.
import { z } from 'zod';
import { isDecimalString } from '../money.ts';

export const modelKinds = ['chat', 'embedding', 'image', 'video'] as const;
export type ModelKind = (typeof modelKinds)[number];

export const availabilities = ['available', 'comingSoon', 'inviteOnly'] as const;
export type Availability = (typeof availabilities)[number];

const decimal = z.string().refine(isDecimalString, 'must be a non-negative decimal string, e.g. "0.15"');

/** Text and embeddings: per 1M tokens. */
export const tokenPriceSchema = z.object({
  input: decimal,
  cachedInput: decimal.optional(),
  output: decimal.optional(),
});
/** Images: per generation. */
export const imagePriceSchema = z.object({ perImage: decimal });
/** Video: per second of output. */
export const videoPriceSchema = z.object({ perSecond: decimal });

export const priceSchema = z.union([tokenPriceSchema, imagePriceSchema, videoPriceSchema]);
export type TokenPrice = z.infer<typeof tokenPriceSchema>;
export type ImagePrice = z.infer<typeof imagePriceSchema>;
export type VideoPrice = z.infer<typeof videoPriceSchema>;
export type Price = z.infer<typeof priceSchema>;

export const capabilitiesSchema = z.object({
  tools: z.boolean().default(false),
  vision: z.boolean().default(false),
  /** Thinks before answering; the engine returns reasoning_content (vLLM --reasoning-parser). */
  reasoning: z.boolean().default(false),
  edit: z.boolean().default(false),
  imageToVideo: z.boolean().default(false),
});
export type Capabilities = z.infer<typeof capabilitiesSchema>;

/**
 * What a prompt can cost beyond its text, in tokens: upper bounds the proxy adds when it holds
 * credits for a call (proxy/billing/text-quote.ts). Unset fields take the proxy's defaults.
 */
export const promptBoundsSchema = z.object({
  /** Tokens one image can take on this model (a vision model's largest tiling). */
  perImage: z.number().int().min(0).max(1_000_000).optional(),
  /** The chat template's tokens around each message. */
  perMessage: z.number().int().min(0).max(10_000).optional(),
  /** The template's tokens once per request (BOS, default system text, tool preamble). */
  perRequest: z.number().int().min(0).max(1_000_000).optional(),
});
export type PromptBounds = z.infer<typeof promptBoundsSchema>;

/** A fair queue in each proxy for a model whose fleet is full (proxy/demand/fair-queue.ts). */
export const queueLimitsSchema = z.object({
  /** Calls one proxy sends to one ready endpoint at once; past it, calls wait in the queue. */
  perReplica: z.number().int().positive(),
  /** Calls waiting per model per proxy, and their request bytes. */
  maxQueued: z.number().int().positive(),
  maxQueuedBytes: z.number().int().positive(),
  /** How long a call may wait for a slot. */
  maxWaitMs: z.number().int().positive(),
});
export type QueueLimits = z.infer<typeof queueLimitsSchema>;

export const endpointSchema = z.object({
  /** Base URL of an OpenAI-compatible engine, e.g. http://10.0.0.7:8000 (no trailing /v1). */
  url: z.string().url(),
  /**
   * Where this engine publishes its KV-cache events (vLLM --kv-events-config: a ZMQ PUB address, the
   * ROUTER replay address, the topic), for the proxies' prefix-cache index (docs/routing.md).
   */
  kvEvents: z
    .object({
      url: z.string().min(1),
      replayUrl: z.string().min(1).optional(),
      topic: z.string().default(''),
    })
    .optional(),
});
export type Endpoint = z.infer<typeof endpointSchema>;

export const catalogueEntrySchema = z.object({
  /** Canonical spelling; may contain `/`. Lookup is case-insensitive. */
  id: z.string().min(1).max(256),
  kind: z.enum(modelKinds),
  /**
   * Other names that resolve to this entry: exact, or a prefix ending in `*` (core/catalogue/aliases.ts).
   * The call is billed, recorded and answered under `id`.
   */
  aliases: z.array(z.string().min(1).max(256)).max(32).default([]),
  /** The model name the engine expects in `model` (vLLM --served-model-name). Defaults to id. */
  servedName: z.string().optional(),
  contextLength: z.number().int().positive().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  /**
   * An asked output bound above maxOutputTokens (else the context length): `clamp` (absent) serves
   * the call at the limit and says so, `refuse` answers 400 naming the field (docs/api.md).
   */
  outputLimitPolicy: z.enum(['clamp', 'refuse']).optional(),
  promptBounds: promptBoundsSchema.optional(),
  /** Currency (ISO 4217) → price. A model with no price in the account currency is hidden. */
  pricing: z.record(z.string().regex(/^[A-Z]{3}$/), priceSchema),
  /** Batch lines pay each token rate less this percent (core/billing/batch-price.ts); unset: none. */
  batchDiscountPercent: z.number().int().min(0).max(100).optional(),
  availability: z.enum(availabilities).default('available'),
  region: z.string().default('global'),
  tags: z.array(z.string()).default([]),
  capabilities: capabilitiesSchema.default({
    tools: false,
    vision: false,
    reasoning: false,
    edit: false,
    imageToVideo: false,
  }),
  endpoints: z.array(endpointSchema).default([]),
  /**
   * Set for a model the operator scales (issue 32): a call finding no ready endpoint is held in the
   * proxy up to this long while the model wakes, instead of a retryable 500 at once.
   */
  coldStartTimeoutMs: z.number().int().positive().optional(),
  /** Set: calls past the fleet's capacity wait in a fair queue per account instead of piling onto the engines. */
  queue: queueLimitsSchema.optional(),
  /**
   * How the proxy tokenizes a request as this model's engine does, to match it against the engines'
   * KV events: 'simulator' (engines/simulator's tokenizer), a directory holding the model's
   * tokenizer.json and tokenizer_config.json (its chat_template), or `hf:<repo>[@<revision>]`
   * to fetch those two from the hub (operator/reconcile/tokenizer.ts). Unset: no prefix index routing.
   */
  tokenizer: z.string().min(1).optional(),
  ownedBy: z.string().default('modelplane'),
  /** Unix seconds the model was first catalogued (OpenAI `created`). */
  created: z.number().int().nonnegative(),
  /** Where the entry came from, e.g. `Model/default/llama` or `local:examples/models/x.yaml`. */
  source: z.string().optional(),
});
export type CatalogueEntry = z.infer<typeof catalogueEntrySchema>;
export type CatalogueEntryInput = z.input<typeof catalogueEntrySchema>;

export const catalogueKey = (id: string) => id.toLowerCase();
