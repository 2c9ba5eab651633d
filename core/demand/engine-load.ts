// The engines' own load, where they export it on /metrics: vLLM's (and the simulator's)
// vllm:num_requests_waiting, vllm:num_requests_running and vllm:kv_cache_usage_perc (older vLLM:
// vllm:gpu_cache_usage_perc), llama.cpp's llamacpp:requests_deferred, requests_processing and
// kv_cache_usage_ratio. Read by the operator's autoscaler (operator/autoscale/engine-load.ts) and
// the proxy's routing score (proxy/engine/kv-index/engine-metrics.ts). Each engine kind names its
// own (operator/engines/, EngineKind.loadMetrics); this is their union, here because the proxy
// reads any endpoint's /metrics without knowing its kind and cannot import operator/ — a test
// there holds the two together.

export const ENGINE_LOAD_METRICS: Readonly<Record<string, 'waiting' | 'running' | 'kv'>> = {
  'vllm:num_requests_waiting': 'waiting',
  'vllm:num_requests_running': 'running',
  'vllm:kv_cache_usage_perc': 'kv',
  'vllm:gpu_cache_usage_perc': 'kv',
  'llamacpp:requests_deferred': 'waiting',
  'llamacpp:requests_processing': 'running',
  'llamacpp:kv_cache_usage_ratio': 'kv',
};

export interface EngineLoadSample {
  waiting: number;
  running: number;
  /** KV-cache usage, 0..1; null when the engine does not export it. */
  kv: number | null;
}

/** One engine's load from its Prometheus text (samples of one name summed over labels; kv: the highest); null: none exported. */
export function parseEngineLoad(text: string): EngineLoadSample | null {
  let seen = false;
  const load = { waiting: 0, running: 0, kv: null as number | null };
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const nameEnd = line.search(/[{ ]/);
    const what = ENGINE_LOAD_METRICS[nameEnd === -1 ? line : line.slice(0, nameEnd)];
    if (what === undefined) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (!Number.isFinite(value)) continue;
    seen = true;
    if (what === 'kv') load.kv = Math.max(load.kv ?? 0, value);
    else load[what] += value;
  }
  return seen ? load : null;
}

/** One engine's load from its /metrics; null when it did not answer in time, refused, or exports none. */
export async function scrapeEngineLoadOf(url: string, timeoutMs: number): Promise<EngineLoadSample | null> {
  try {
    const res = await fetch(`${url.replace(/\/+$/, '')}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
    return res.ok ? parseEngineLoad(await res.text()) : null;
  } catch {
    return null;
  }
}
