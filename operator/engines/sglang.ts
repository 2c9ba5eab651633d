// SGLang: launched as a Python module (what it shares with vLLM: ./gpu-server.ts);
// --enable-cache-report puts cached tokens into usage.
import { gpuServerArgs, gpuServerTemplate } from './gpu-server.ts';
import type { EngineDefaults, EngineInput, EngineTemplate } from './types.ts';

export const sglangDefaults: EngineDefaults = { image: 'lmsysorg/sglang:v0.5.3-cu126', port: 30000, gpus: 1 };

export function sglangTemplate(input: EngineInput): EngineTemplate {
  return gpuServerTemplate(input, {
    image: input.engine.image ?? sglangDefaults.image,
    command: input.engine.command ?? ['python3', '-m', 'sglang.launch_server'],
    args: gpuServerArgs(
      input,
      { model: '--model-path', contextLength: '--context-length', tensorParallel: '--tp' },
      ['--enable-cache-report'],
    ),
  });
}
