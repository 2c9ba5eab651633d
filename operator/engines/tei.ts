// Text Embeddings Inference (embedding models). The CPU image is used when no GPU is asked for.
// No drain flag we could confirm (docs/models.md "Drain"): the preStop holds the drain.
import {
  type EngineDefaults,
  type EngineInput,
  type EngineKind,
  type EngineTemplate,
  engineContainer,
  healthProbes,
} from './types.ts';

const defaults: EngineDefaults = {
  image: 'ghcr.io/huggingface/text-embeddings-inference:1.8',
  port: 8080,
  gpus: 0,
};
const cpuImage = 'ghcr.io/huggingface/text-embeddings-inference:cpu-1.8';

function template(input: EngineInput): EngineTemplate {
  const args = ['--model-id', input.weights, '--served-model-name', input.servedName];
  args.push('--hostname', '0.0.0.0', '--port', String(input.port));
  if (input.revision) args.push('--revision', input.revision);
  return {
    container: engineContainer(input, {
      image: input.engine.image ?? (input.gpus > 0 ? defaults.image : cpuImage),
      args: [...args, ...(input.engine.args ?? [])],
      ...healthProbes('/health'),
    }),
  };
}

export const tei: EngineKind = { type: 'tei', defaults, template, downloadsWeights: true };
