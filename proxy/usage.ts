// What a call used and what it cost, in the one spelling every room of the proxy shares: the
// engine's reading fills a usage (proxy/engine/frames/), billing prices it and records it
// (proxy/billing/), the dialects write it and its cost into the client's answer (proxy/dialects/),
// tracing puts it on the settlement's span. A leaf — it imports nothing — at the proxy's root
// rather than in any one of those rooms, so each may import it without importing the others: the
// dialects know nothing of billing, and billing nothing of how an engine spells its usage.
// (core's UsageRecord is the record as the ledger persists it — these counts with the call's key,
// model and kind; core's UsageCounts are rollups: sums over many calls, with their number.)

/**
 * What one call used, as its charge counts it: tokens for text and embeddings, images, seconds of
 * video; a modality leaves the counts it has none of unset.
 */
export interface CallUsage {
  inputTokens?: number;
  /** The part of inputTokens the engine served from its cache (billed at the cached rate). */
  cachedTokens?: number;
  outputTokens?: number;
  images?: number;
  videoSeconds?: number;
}

/** A text call's usage (chat, embeddings): its three token counts, all known. */
export type TextUsage = Required<Pick<CallUsage, 'inputTokens' | 'cachedTokens' | 'outputTokens'>> & {
  /**
   * The part of outputTokens that was reasoning, when the engine reports it (OpenAI's
   * completion_tokens_details.reasoning_tokens); not billed apart, only reported.
   */
  reasoningTokens?: number;
};

/** What every response's usage says it cost (`usage.cost`, `usage.currency`; DESIGN "Money"). */
export interface CallCost {
  /** The amount charged, an exact decimal string of the account's currency. */
  cost: string;
  /** ISO 4217. */
  currency: string;
}
