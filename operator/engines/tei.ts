// Text Embeddings Inference (embedding models). The CPU image is used when no GPU is asked for.
import {
  type EngineDefaults,
  type EngineInput,
  type EngineTemplate,
  engineContainer,
  healthProbes,
} from './types.ts';

export const teiDefaults: EngineDefaults = {
  image: 'ghcr.io/huggingface/text-embeddings-inference:1.8',
  port: 8080,
  gpus: 0,
};
const cpuImage = 'ghcr.io/huggingface/text-embeddings-inference:cpu-1.8';

export function teiTemplate(input: EngineInput): EngineTemplate {
  const args = ['--model-id', input.weights, '--served-model-name', input.servedName];
  args.push('--hostname', '0.0.0.0', '--port', String(input.port));
  if (input.revision) args.push('--revision', input.revision);
  return {
    container: engineContainer(input, {
      image: input.engine.image ?? (input.gpus > 0 ? teiDefaults.image : cpuImage),
      args: [...args, ...(input.engine.args ?? [])],
      ...healthProbes('/health'),
    }),
  };
}
