// The engines' own load, where they export it on /metrics: vLLM's (and the simulator's)
// vllm:num_requests_waiting, vllm:num_requests_running and vllm:kv_cache_usage_perc (older vLLM:
// vllm:gpu_cache_usage_perc), llama.cpp's llamacpp:requests_deferred, requests_processing and
// kv_cache_usage_ratio. Requests queued inside an engine are demand the proxies cannot see. An
// engine that does not answer in time, or exports none of these, is left out: the proxies'
// demand alone decides then.
import type { EngineLoad } from './decide.ts';

const NAMES: Record<string, 'waiting' | 'running' | 'kv'> = {
  'vllm:num_requests_waiting': 'waiting',
  'vllm:num_requests_running': 'running',
  'vllm:kv_cache_usage_perc': 'kv',
  'vllm:gpu_cache_usage_perc': 'kv',
  'llamacpp:requests_deferred': 'waiting',
  'llamacpp:requests_processing': 'running',
  'llamacpp:kv_cache_usage_ratio': 'kv',
};

/** One engine's load from its Prometheus text (samples of one name summed over labels; kv: the highest); null: none exported. */
export function parseEngineLoad(
  text: string,
): { waiting: number; running: number; kv: number | null } | null {
  let seen = false;
  const load = { waiting: 0, running: 0, kv: null as number | null };
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const nameEnd = line.search(/[{ ]/);
    const what = NAMES[nameEnd === -1 ? line : line.slice(0, nameEnd)];
    if (what === undefined) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (!Number.isFinite(value)) continue;
    seen = true;
    if (what === 'kv') load.kv = Math.max(load.kv ?? 0, value);
    else load[what] += value;
  }
  return seen ? load : null;
}

/** One engine's load from its /metrics; null when it did not answer in time or exports none. */
export async function scrapeOne(
  url: string,
  timeoutMs = 1_000,
): Promise<{ waiting: number; running: number; kv: number | null } | null> {
  try {
    const res = await fetch(`${url.replace(/\/+$/, '')}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
    return res.ok ? parseEngineLoad(await res.text()) : null;
  } catch {
    return null;
  }
}

/** Calls in one engine (running + waiting), for choosing which replica a scale-down removes. */
export async function callsInEngine(url: string, timeoutMs = 1_000): Promise<number | null> {
  const load = await scrapeOne(url, timeoutMs);
  return load === null ? null : load.running + load.waiting;
}

/** The load summed over the endpoints that answered; null when none did. */
export async function scrapeEngineLoad(
  endpoints: readonly string[],
  timeoutMs = 1_000,
): Promise<EngineLoad | null> {
  const loads = await Promise.all(endpoints.map((url) => scrapeOne(url, timeoutMs)));
  const answered = loads.filter((l) => l !== null);
  if (answered.length === 0) return null;
  const kvs = answered.map((l) => l.kv).filter((k) => k !== null);
  return {
    replicas: answered.length,
    waiting: answered.reduce((n, l) => n + l.waiting, 0),
    running: answered.reduce((n, l) => n + l.running, 0),
    kvCacheUsage: kvs.length === 0 ? null : Math.min(...kvs),
  };
}
