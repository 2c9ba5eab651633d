// Counters behind GET /metrics (Prometheus text format, vLLM metric names) and stats().

import type { Scheduler } from './scheduler.ts';

export type FailureMode = 'before-first-byte' | 'mid-stream' | 'error-frame' | 'reset' | 'video';

export interface SimulatorStats {
  /** Requests currently generating / waiting for a concurrency slot. */
  running: number;
  waiting: number;
  /** Most requests that ever ran at once. */
  peakRunning: number;
  /** Requests received on /v1 routes, whatever their outcome. */
  requests: number;
  /** Chat, embedding and image requests that finished normally. */
  completed: number;
  /** Requests whose client disconnected before the response was complete. */
  aborted: number;
  injectedFailures: Record<FailureMode, number>;
  promptTokens: number;
  generationTokens: number;
  cachedTokens: number;
}

interface ModelCounters {
  promptTokens: number;
  generationTokens: number;
  prefixQueries: number;
  prefixHits: number;
  success: Map<string, number>;
}

export class Metrics {
  requests = 0;
  completed = 0;
  aborted = 0;
  readonly injectedFailures: Record<FailureMode, number> = {
    'before-first-byte': 0,
    'mid-stream': 0,
    'error-frame': 0,
    reset: 0,
    video: 0,
  };
  private readonly perModel = new Map<string, ModelCounters>();

  constructor(
    private readonly scheduler: Scheduler,
    private readonly settings: () => { models: string[]; kvCacheTokens: number },
  ) {}

  model(name: string): ModelCounters {
    let c = this.perModel.get(name);
    if (!c) {
      c = { promptTokens: 0, generationTokens: 0, prefixQueries: 0, prefixHits: 0, success: new Map() };
      this.perModel.set(name, c);
    }
    return c;
  }

  recordPrompt(model: string, promptTokens: number, cachedTokens: number): void {
    const c = this.model(model);
    c.promptTokens += promptTokens;
    c.prefixQueries += promptTokens;
    c.prefixHits += cachedTokens;
  }

  recordGenerated(model: string, tokens: number): void {
    this.model(model).generationTokens += tokens;
  }

  /** One finished request; one finish reason per choice. */
  recordFinished(model: string, reasons: string[]): void {
    const c = this.model(model);
    for (const reason of reasons) c.success.set(reason, (c.success.get(reason) ?? 0) + 1);
    this.completed++;
  }

  stats(): SimulatorStats {
    let promptTokens = 0;
    let generationTokens = 0;
    let cachedTokens = 0;
    for (const c of this.perModel.values()) {
      promptTokens += c.promptTokens;
      generationTokens += c.generationTokens;
      cachedTokens += c.prefixHits;
    }
    return {
      running: this.scheduler.totalRunning,
      waiting: this.scheduler.totalWaiting,
      peakRunning: this.scheduler.peakRunning,
      requests: this.requests,
      completed: this.completed,
      aborted: this.aborted,
      injectedFailures: { ...this.injectedFailures },
      promptTokens,
      generationTokens,
      cachedTokens,
    };
  }

  /** Prometheus text exposition format 0.0.4. */
  render(): string {
    const { models, kvCacheTokens } = this.settings();
    for (const m of models) this.model(m);
    const names = [...this.perModel.keys()];
    const out: string[] = [];
    const family = (name: string, type: string, help: string, rows: Array<[string, number]>) => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      for (const [labels, value] of rows)
        out.push(labels ? `${name}{${labels}} ${value}` : `${name} ${value}`);
    };
    // vLLM 0.32 labels each family with its engine core's index (one core here) beside model_name.
    const perModel = (value: (m: string) => number): Array<[string, number]> =>
      names.map((m) => [`engine="0",model_name="${escapeLabel(m)}"`, value(m)]);
    const kvUsage = Math.min(1, this.scheduler.kvTokens / kvCacheTokens);
    family(
      'vllm:num_requests_running',
      'gauge',
      'Number of requests in model execution batches.',
      perModel((m) => this.scheduler.running.get(m) ?? 0),
    );
    family(
      'vllm:num_requests_waiting',
      'gauge',
      'Number of requests waiting to be processed.',
      perModel((m) => this.scheduler.waiting.get(m) ?? 0),
    );
    family(
      'vllm:kv_cache_usage_perc',
      'gauge',
      'KV-cache usage. 1 means 100 percent usage.',
      perModel(() => kvUsage),
    );
    family(
      'vllm:prompt_tokens_total',
      'counter',
      'Number of prefill tokens processed.',
      perModel((m) => this.model(m).promptTokens),
    );
    family(
      'vllm:generation_tokens_total',
      'counter',
      'Number of generation tokens processed.',
      perModel((m) => this.model(m).generationTokens),
    );
    family(
      'vllm:prefix_cache_queries_total',
      'counter',
      'Prefix cache queries, in terms of number of queried tokens.',
      perModel((m) => this.model(m).prefixQueries),
    );
    family(
      'vllm:prefix_cache_hits_total',
      'counter',
      'Prefix cache hits, in terms of number of cached tokens.',
      perModel((m) => this.model(m).prefixHits),
    );
    const success: Array<[string, number]> = [];
    for (const m of names) {
      for (const [reason, n] of this.model(m).success) {
        success.push([
          `engine="0",finished_reason="${escapeLabel(reason)}",model_name="${escapeLabel(m)}"`,
          n,
        ]);
      }
    }
    family('vllm:request_success_total', 'counter', 'Count of successfully processed requests.', success);
    family('simulator_requests_aborted_total', 'counter', 'Requests whose client disconnected early.', [
      ['', this.aborted],
    ]);
    family(
      'simulator_injected_failures_total',
      'counter',
      'Failures injected on purpose, by mode.',
      Object.entries(this.injectedFailures).map(([mode, n]) => [`mode="${mode}"`, n]),
    );
    return `${out.join('\n')}\n`;
  }
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}
