// The engines' own load for the routing score (./score.ts): each endpoint's /metrics scraped every
// `intervalMs` (vLLM's and the simulator's vllm:num_requests_waiting, num_requests_running,
// kv_cache_usage_perc; core/demand/engine-load.ts reads them). An engine's report counts every proxy
// replica's requests, which this replica's in-flight count cannot; a report older than `staleMs`
// is not used (llm-d's scheduler drops metrics past its staleness bound the same way), so an
// engine that stops answering falls back to this replica's own count. One scrape per endpoint at
// a time; each replica scrapes for itself (a Redis copy would be as old as its slowest writer).
import { type EngineLoadSample, scrapeEngineLoadOf } from '../../../core/demand/engine-load.ts';
import type { EngineReport } from './score.ts';

interface Report extends EngineLoadSample {
  at: number;
  inFlightAtScrape: number;
}

export interface EngineMetricsOptions {
  intervalMs: number;
  staleMs: number;
  /** This replica's requests in flight on an endpoint now (the picker's count). */
  inFlight: (url: string) => number;
}

export class EngineMetrics {
  private readonly reports = new Map<string, Report>();
  private readonly scraping = new Set<string>();
  private urls: readonly string[] = [];
  private readonly timer: NodeJS.Timeout;
  /** Scrapes that failed or exported none of the names (metrics, tests). */
  failures = 0;

  constructor(private readonly o: EngineMetricsOptions) {
    this.timer = setInterval(() => this.scrapeAll(), o.intervalMs);
    this.timer.unref();
  }

  /** The endpoints to follow; a report of one no longer listed is dropped. */
  sync(urls: readonly string[]): void {
    this.urls = [...new Set(urls)];
    for (const url of this.reports.keys()) if (!this.urls.includes(url)) this.reports.delete(url);
    this.scrapeAll();
  }

  /** The engine's last report, unless older than the staleness bound. */
  report(url: string, now = performance.now()): EngineReport | undefined {
    const r = this.reports.get(url);
    return r !== undefined && now - r.at <= this.o.staleMs ? r : undefined;
  }

  close(): void {
    clearInterval(this.timer);
    this.urls = [];
  }

  private scrapeAll(): void {
    for (const url of this.urls) if (!this.scraping.has(url)) void this.scrape(url);
  }

  private async scrape(url: string): Promise<void> {
    this.scraping.add(url);
    const inFlightAtScrape = this.o.inFlight(url);
    try {
      // Unreachable, slow or exporting nothing: counted, and its last report ages out.
      const load = await scrapeEngineLoadOf(url, this.o.staleMs);
      if (load === null) this.failures++;
      else if (this.urls.includes(url))
        this.reports.set(url, { ...load, at: performance.now(), inFlightAtScrape });
    } finally {
      this.scraping.delete(url);
    }
  }
}
