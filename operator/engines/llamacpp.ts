// llama.cpp server: GGUF weights from a Hugging Face repo; all layers offloaded when a GPU is given.
import {
  type EngineDefaults,
  type EngineInput,
  type EngineTemplate,
  engineContainer,
  hasFlag,
  healthProbes,
} from './types.ts';

export const llamacppDefaults: EngineDefaults = {
  image: 'ghcr.io/ggml-org/llama.cpp:server',
  port: 8080,
  gpus: 0,
};
const cudaImage = 'ghcr.io/ggml-org/llama.cpp:server-cuda';

export function llamacppTemplate(input: EngineInput): EngineTemplate {
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
      image: input.engine.image ?? (input.gpus > 0 ? cudaImage : llamacppDefaults.image),
      args: [...args, ...user],
      ...healthProbes('/health'),
    }),
  };
}
