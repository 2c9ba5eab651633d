// SGLang: launched as a Python module (what it shares with vLLM: ./gpu-server.ts);
// --enable-cache-report puts cached tokens into usage. No drain flag we could confirm in its docs
// or sources (docs/models.md "Drain"): taken as ending on SIGTERM, so the preStop holds the drain
// (slower to stop, never a cut stream).
import { gpuServerArgs, gpuServerTemplate } from './gpu-server.ts';
import type { EngineDefaults, EngineKind } from './types.ts';

const defaults: EngineDefaults = { image: 'lmsysorg/sglang:v0.5.3-cu126', port: 30000, gpus: 1 };

export const sglang: EngineKind = {
  type: 'sglang',
  defaults,
  template: (input) =>
    gpuServerTemplate(input, {
      image: input.engine.image ?? defaults.image,
      command: input.engine.command ?? ['python3', '-m', 'sglang.launch_server'],
      args: gpuServerArgs(
        input,
        { model: '--model-path', contextLength: '--context-length', tensorParallel: '--tp' },
        ['--enable-cache-report'],
      ),
    }),
  downloadsWeights: true,
};
