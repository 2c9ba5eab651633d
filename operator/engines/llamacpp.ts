// llama.cpp server: GGUF weights from a Hugging Face repo; all layers offloaded when a GPU is given.
// No drain flag we could confirm (docs/models.md "Drain"): the preStop holds the drain.
import {
  type EngineDefaults,
  type EngineInput,
  type EngineKind,
  type EngineTemplate,
  engineContainer,
  hasFlag,
  healthProbes,
} from './types.ts';

const defaults: EngineDefaults = {
  image: 'ghcr.io/ggml-org/llama.cpp:server',
  port: 8080,
  gpus: 0,
};
const cudaImage = 'ghcr.io/ggml-org/llama.cpp:server-cuda';

function template(input: EngineInput): EngineTemplate {
  const user = input.engine.args ?? [];
  const own = hasFlag(user, '-m') || hasFlag(user, '--model');
  // A cached or mounted GGUF file is opened in place; a repo is downloaded (into the scratch volume).
  const source = own ? [] : input.localWeights ? ['--model', input.weights] : ['--hf-repo', input.weights];
  const args = [...source, '--alias', input.servedName, '--host', '0.0.0.0', '--port', String(input.port)];
  if (input.spec.contextLength && !hasFlag(user, '-c') && !hasFlag(user, '--ctx-size')) {
    args.push('--ctx-size', String(input.spec.contextLength));
  }
  if (input.gpus > 0 && !hasFlag(user, '-ngl')) args.push('-ngl', '999');
  if (input.spec.capabilities?.tools && !hasFlag(user, '--jinja')) args.push('--jinja');
  return {
    container: engineContainer(input, {
      image: input.engine.image ?? (input.gpus > 0 ? cudaImage : defaults.image),
      args: [...args, ...user],
      ...healthProbes('/health'),
    }),
  };
}

export const llamacpp: EngineKind = {
  type: 'llamacpp',
  defaults,
  template,
  // Into LLAMA_CACHE for --hf-repo.
  downloadsWeights: true,
  loadMetrics: {
    'llamacpp:requests_deferred': 'waiting',
    'llamacpp:requests_processing': 'running',
    'llamacpp:kv_cache_usage_ratio': 'kv',
  },
  rules: [
    {
      cel: '!has(self.engine.weights) || has(self.engine.weights.source.huggingFace) || has(self.engine.weights.file)',
      message: 'llama.cpp loads one GGUF file: weights from a pvc or s3 need spec.engine.weights.file',
      holds: (engine) =>
        engine.weights === undefined ||
        engine.weights.source.huggingFace !== undefined ||
        engine.weights.file !== undefined,
    },
  ],
};
