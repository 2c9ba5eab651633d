// The proxy's prefix-cache routing knobs (docs/routing.md "Knobs"): one concern of the proxy's
// settings (./proxy.ts spreads them in), documented together in docs/routing.md.
import { z } from 'zod';

export const routingConfig = {
  /**
   * Prefix-cache routing (docs/routing.md): endpoints are scored by expected time to first token =
   * uncached prompt tokens × PROXY_ROUTING_PREFILL_US_PER_TOKEN + requests ahead ×
   * PROXY_ROUTING_LOAD_MS (+ the engines' own waiting queue and KV-cache usage from /metrics,
   * scraped every PROXY_ROUTING_METRICS_MS, trusted for PROXY_ROUTING_METRICS_STALE_MS), from the
   * engines' KV events; off: the picker alone.
   */
  PROXY_ROUTING_KV_EVENTS: z
    .enum(['true', 'false', '1', '0'])
    .default('true')
    .transform((v) => v === 'true' || v === '1'),
  PROXY_ROUTING_PREFILL_US_PER_TOKEN: z.coerce.number().min(0).default(100),
  PROXY_ROUTING_LOAD_MS: z.coerce.number().min(0).default(100),
  PROXY_ROUTING_WAITING_MS: z.coerce.number().min(0).default(100),
  PROXY_ROUTING_KV_FULL_MS: z.coerce.number().min(0).default(100),
  /** 0: the engines' /metrics are not scraped (this replica's in-flight count alone). */
  PROXY_ROUTING_METRICS_MS: z.coerce.number().int().min(0).default(200),
  PROXY_ROUTING_METRICS_STALE_MS: z.coerce.number().int().positive().default(1_000),
  /** Blocks the index keeps per model (each a few hundred bytes with its holders). */
  PROXY_ROUTING_INDEX_BLOCKS: z.coerce.number().int().positive().default(1_000_000),
  /**
   * Routing tokenizes prompts on worker threads (proxy/engine/kv-index/tokenizer-pool.ts): this
   * many, at most QUEUE jobs outstanding over them, each call waiting at most BUDGET_MS for its
   * tokens (past either, the call is routed without the index); each thread keeps up to
   * CACHE_TOKENS tokens of prompt pieces already encoded (a session's history, a shared prefix).
   */
  PROXY_ROUTING_TOKENIZE_THREADS: z.coerce.number().int().min(1).max(64).default(2),
  PROXY_ROUTING_TOKENIZE_QUEUE: z.coerce.number().int().min(1).default(64),
  PROXY_ROUTING_TOKENIZE_BUDGET_MS: z.coerce.number().int().min(1).default(50),
  PROXY_ROUTING_TOKENIZE_CACHE_TOKENS: z.coerce.number().int().min(0).default(2_000_000),
  /** Where a catalogue `tokenizer: hf:<repo>` is fetched from: the Hugging Face hub or a mirror. */
  PROXY_TOKENIZER_HUB_URL: z.string().url().default('https://huggingface.co'),
  /** HF_TOKEN for gated tokenizers; sent to PROXY_TOKENIZER_HUB_URL only, never logged. */
  PROXY_TOKENIZER_HUB_TOKEN: z.string().min(1).optional(),
};
