// The routing score: the expected time to first token on each endpoint, lowest wins — the prompt
// tokens the endpoint must prefill (those its prefix cache does not hold) at a prefill cost, plus a
// wait for each request already in flight there. A warm endpoint wins until its queue costs more
// than the prefill it saves, so a hot prefix spreads once one engine is busy enough (Dynamo's
// router weighs the same two terms). Weights come from config (PROXY_ROUTING_*).

export interface RoutingWeights {
  /** Prefill cost of one uncached prompt token, µs. */
  prefillUsPerToken: number;
  /** Expected wait added by each request in flight on the endpoint, ms. */
  loadMs: number;
}

/**
 * Tokens an engine reports cached for a prompt whose leading `blocks` full blocks it holds: never
 * the last prompt token, which vLLM always computes (so at most the full blocks before it).
 */
export function cachedTokens(blocks: number, blockSize: number, promptTokens: number): number {
  const reusable = Math.floor(Math.max(0, promptTokens - 1) / blockSize);
  return Math.min(blocks, reusable) * blockSize;
}

export function expectedTtftMs(
  promptTokens: number,
  cached: number,
  inFlight: number,
  w: RoutingWeights,
): number {
  return ((promptTokens - cached) * w.prefillUsPerToken) / 1000 + inFlight * w.loadMs;
}
