// Text Embeddings Inference (embedding models). The CPU image is used when no GPU is asked for.
import {
  type EngineDefaults,
  type EngineInput,
  type EngineTemplate,
  envFor,
  healthProbes,
  resourcesFor,
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
  return {
    container: {
      name: 'engine',
      image: input.engine.image ?? (input.gpus > 0 ? teiDefaults.image : cpuImage),
      ...(input.engine.command ? { command: input.engine.command } : {}),
      args: [...args, ...(input.engine.args ?? [])],
      env: envFor(input),
      ports: [{ name: 'http', containerPort: input.port, protocol: 'TCP' }],
      resources: resourcesFor(input),
      ...healthProbes('/health'),
    },
  };
}
