// The engines' own load, where they export it on /metrics: vLLM's (and the simulator's)
// vllm:num_requests_waiting, vllm:num_requests_running and vllm:kv_cache_usage_perc (older vLLM:
// vllm:gpu_cache_usage_perc), llama.cpp's llamacpp:requests_deferred, requests_processing and
// kv_cache_usage_ratio. Requests queued inside an engine are demand the proxies cannot see. An
// engine that does not answer in time, or exports none of these, is left out: the proxies'
// demand alone decides then.
import { type EngineLoadSample, scrapeEngineLoadOf } from '../../core/demand/engine-load.ts';
import type { EngineLoad } from './decide.ts';

/** One engine's load from its /metrics; null when it did not answer in time or exports none. */
export const scrapeOne = (url: string, timeoutMs = 1_000): Promise<EngineLoadSample | null> =>
  scrapeEngineLoadOf(url, timeoutMs);

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
