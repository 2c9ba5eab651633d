// The routing score alone: what each term adds, how the engine's report and this replica's own
// count combine, and where the load wins over a warm prefix.
import { describe, expect, it } from 'vitest';
import {
  cachedTokens,
  type EngineReport,
  expectedTtftMs,
  type RoutingWeights,
  requestsAhead,
} from './score.ts';

const w: RoutingWeights = { prefillUsPerToken: 100, loadMs: 100, waitingMs: 100, kvFullMs: 100 };
const report = (o: Partial<EngineReport>): EngineReport => ({
  waiting: 0,
  running: 0,
  kv: null,
  inFlightAtScrape: 0,
  ...o,
});

describe('routing score', () => {
  it('never predicts the last prompt token cached: full blocks before it, at most', () => {
    expect(cachedTokens(3, 4, 13)).toBe(12);
    expect(cachedTokens(3, 4, 12)).toBe(8); // the 12th token is computed, so its block is not reused
    expect(cachedTokens(1, 4, 13)).toBe(4);
    expect(cachedTokens(5, 4, 1)).toBe(0);
  });

  it("requests ahead: the engine's report plus what this replica sent since, never below its own count", () => {
    expect(requestsAhead(2, undefined)).toBe(2);
    // Other replicas' requests are in the report; ours sent after the scrape are not yet.
    expect(requestsAhead(3, report({ running: 4, waiting: 2, inFlightAtScrape: 1 }))).toBe(8);
    // Ours finished since the scrape: the report may still count them, it is not lowered by them.
    expect(requestsAhead(0, report({ running: 1, inFlightAtScrape: 2 }))).toBe(1);
    // A report older than requests this replica has on the engine cannot see fewer than those.
    expect(requestsAhead(5, report({ running: 1, inFlightAtScrape: 5 }))).toBe(5);
  });

  it('adds each term: uncached prefill, requests ahead, the waiting queue, KV-cache usage', () => {
    expect(expectedTtftMs(1000, 600, 0, w)).toBe(40);
    expect(expectedTtftMs(1000, 600, 2, w)).toBe(240);
    const r = report({ running: 2, waiting: 3, kv: 0.5, inFlightAtScrape: 0 });
    // 40 prefill + 5 ahead × 100 + 3 waiting × 100 + 0.5 × 100
    expect(expectedTtftMs(1000, 600, 0, w, r)).toBe(40 + 500 + 300 + 50);
  });

  it('a warm endpoint wins until the queue its engine reports costs more than the prefill it saves', () => {
    // 8000-token prompt: warm holds 7936, cold none; 793.6 ms of prefill saved.
    const warm = (r: EngineReport) => expectedTtftMs(8000, 7936, 0, w, r);
    const cold = expectedTtftMs(8000, 0, 0, w, report({}));
    expect(warm(report({ running: 3 }))).toBeLessThan(cold);
    expect(warm(report({ running: 4, waiting: 2 }))).toBeGreaterThan(cold);
  });
});
