// vLLM: OpenAI-compatible server. Usage details are switched on so the proxy can bill cached
// tokens and a stream cut short (DESIGN "Money"); /dev/shm is enlarged for tensor parallelism.
import {
  type EngineDefaults,
  type EngineInput,
  type EngineTemplate,
  engineContainer,
  hasFlag,
  healthProbes,
  shmVolume,
} from './types.ts';

export const vllmDefaults: EngineDefaults = { image: 'vllm/vllm-openai:v0.11.0', port: 8000, gpus: 1 };

export function vllmTemplate(input: EngineInput): EngineTemplate {
  const user = input.engine.args ?? [];
  const args = ['--model', input.weights, '--served-model-name', input.servedName, '--host', '0.0.0.0'];
  args.push('--port', String(input.port));
  args.push('--enable-prompt-tokens-details', '--enable-force-include-usage');
  if (input.spec.contextLength && !hasFlag(user, '--max-model-len')) {
    args.push('--max-model-len', String(input.spec.contextLength));
  }
  if (input.gpus > 1 && !hasFlag(user, '--tensor-parallel-size')) {
    args.push('--tensor-parallel-size', String(input.gpus));
  }
  if (input.spec.capabilities?.tools && !hasFlag(user, '--enable-auto-tool-choice')) {
    args.push('--enable-auto-tool-choice');
    if (!hasFlag(user, '--tool-call-parser')) args.push('--tool-call-parser', 'hermes');
  }
  return {
    container: engineContainer(input, {
      image: input.engine.image ?? vllmDefaults.image,
      args: [...args, ...user],
      ...healthProbes('/health'),
      volumeMounts: [{ name: 'dshm', mountPath: '/dev/shm' }],
    }),
    volumes: [shmVolume],
  };
}
