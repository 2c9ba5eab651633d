// The routing score: the expected time to first token on each endpoint, lowest wins — the prompt
// tokens the endpoint must prefill (those its prefix cache does not hold) at a prefill cost, plus a
// wait for the requests ahead of ours there, plus a cost for a KV cache near full. A warm endpoint
// wins until its queue costs more than the prefill it saves, so a hot prefix spreads once one
// engine is busy enough (Dynamo's router weighs the same two terms; llm-d's scheduler adds the
// engines' queue depth and KV-cache usage from their /metrics, as here). Weights come from config
// (PROXY_ROUTING_*).

export interface RoutingWeights {
  /** Prefill cost of one uncached prompt token, µs. */
  prefillUsPerToken: number;
  /** Expected wait added by each request in flight on the endpoint, ms. */
  loadMs: number;
  /** Added for each request the engine reports waiting for a slot (it must start before ours), ms. */
  waitingMs: number;
  /** Cost of a full KV cache (scaled by the usage): it evicts prefix blocks or preempts, ms. */
  kvFullMs: number;
}

/** What the engine itself reported on /metrics (../engine-metrics.ts), when fresh enough. */
export interface EngineReport {
  waiting: number;
  running: number;
  /** 0..1; null when the engine does not export it. */
  kv: number | null;
  /** This replica's requests in flight on the endpoint when the report was asked for. */
  inFlightAtScrape: number;
}

/**
 * Tokens an engine reports cached for a prompt whose leading `blocks` full blocks it holds: never
 * the last prompt token, which vLLM always computes (so at most the full blocks before it).
 */
export function cachedTokens(blocks: number, blockSize: number, promptTokens: number): number {
  const reusable = Math.floor(Math.max(0, promptTokens - 1) / blockSize);
  return Math.min(blocks, reusable) * blockSize;
}

/**
 * The requests ahead of a new one on the endpoint. This replica's own count is exact but blind to
 * the other replicas; the engine's report sees every replica's but is as old as the scrape — so the
 * report plus what this replica sent there since, and never less than this replica's own count.
 */
export function requestsAhead(inFlight: number, report: EngineReport | undefined): number {
  if (report === undefined) return inFlight;
  const sentSince = Math.max(0, inFlight - report.inFlightAtScrape);
  return Math.max(inFlight, report.running + report.waiting + sentSince);
}

export function expectedTtftMs(
  promptTokens: number,
  cached: number,
  inFlight: number,
  w: RoutingWeights,
  report?: EngineReport,
): number {
  let ms = ((promptTokens - cached) * w.prefillUsPerToken) / 1000;
  ms += requestsAhead(inFlight, report) * w.loadMs;
  if (report !== undefined) ms += report.waiting * w.waitingMs + (report.kv ?? 0) * w.kvFullMs;
  return ms;
}
