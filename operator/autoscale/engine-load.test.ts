import { describe, expect, it } from 'vitest';
import { parseEngineLoad } from '../../core/demand/engine-load.ts';

describe("the engines' load from their /metrics", () => {
  it("reads vLLM's names (labels summed) and llama.cpp's; none exported is null", () => {
    const vllm = [
      '# HELP vllm:num_requests_waiting Number of requests waiting.',
      '# TYPE vllm:num_requests_waiting gauge',
      'vllm:num_requests_waiting{model_name="m",engine="0"} 3.0',
      'vllm:num_requests_waiting{model_name="m",engine="1"} 2.0',
      'vllm:num_requests_running{model_name="m"} 7',
      'vllm:kv_cache_usage_perc{model_name="m"} 0.42',
      'vllm:prompt_tokens_total{model_name="m"} 1234',
    ].join('\n');
    expect(parseEngineLoad(vllm)).toEqual({ waiting: 5, running: 7, kv: 0.42 });
    const llama =
      'llamacpp:requests_deferred 1\nllamacpp:requests_processing 2\nllamacpp:kv_cache_usage_ratio 0.9\n';
    expect(parseEngineLoad(llama)).toEqual({ waiting: 1, running: 2, kv: 0.9 });
    expect(parseEngineLoad('process_cpu_seconds_total 3\n')).toBeNull();
  });
});
