// One-connection latency probes with microsecond resolution (autocannon rounds to whole
// milliseconds, too coarse for a sub-millisecond overhead budget). Requests run back to back on one
// keep-alive connection; for streams the clock stops at the first `data:` frame (TTFT).
import { Pool } from 'undici';

export interface LatencyResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  /** Every request's time in ms, sorted (to merge runs exactly). */
  samples: number[];
  seconds: number;
}

export interface Probe {
  url: string;
  path: string;
  body: string;
  headers: Record<string, string>;
  /** Stop the clock at the first body bytes that contain `data:` instead of at the end. */
  firstFrame: boolean;
}

export async function probeLatency(p: Probe, durationMs: number): Promise<LatencyResult> {
  const pool = new Pool(p.url, { connections: 1, pipelining: 1 });
  const samples: number[] = [];
  const start = performance.now();
  try {
    while (performance.now() - start < durationMs) {
      const t0 = performance.now();
      const res = await pool.request({ method: 'POST', path: p.path, headers: p.headers, body: p.body });
      let stopped: number | null = null;
      for await (const chunk of res.body) {
        if (stopped === null && p.firstFrame && (chunk as Buffer).includes('data:'))
          stopped = performance.now();
      }
      const t1 = stopped ?? performance.now();
      if (res.statusCode !== 200) throw new Error(`${p.url}${p.path} answered ${res.statusCode}`);
      samples.push(t1 - t0);
    }
  } finally {
    await pool.close();
  }
  const elapsed = (performance.now() - start) / 1000;
  samples.sort((a, b) => a - b);
  return {
    requests: samples.length,
    rps: samples.length / elapsed,
    ...percentiles(samples),
    samples,
    seconds: elapsed,
  };
}

/** p50 and p99 of sorted samples. */
export function percentiles(sorted: readonly number[]): { p50: number; p99: number } {
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99) };
}
