// SGLang: launched as a Python module; --enable-cache-report puts cached tokens into usage.
import {
  type EngineDefaults,
  type EngineInput,
  type EngineTemplate,
  engineContainer,
  hasFlag,
  healthProbes,
  shmVolume,
} from './types.ts';

export const sglangDefaults: EngineDefaults = { image: 'lmsysorg/sglang:v0.5.3-cu126', port: 30000, gpus: 1 };

export function sglangTemplate(input: EngineInput): EngineTemplate {
  const user = input.engine.args ?? [];
  const args = ['--model-path', input.weights, '--served-model-name', input.servedName, '--host', '0.0.0.0'];
  args.push('--port', String(input.port), '--enable-cache-report');
  if (input.spec.contextLength && !hasFlag(user, '--context-length')) {
    args.push('--context-length', String(input.spec.contextLength));
  }
  if (input.gpus > 1 && !hasFlag(user, '--tp')) args.push('--tp', String(input.gpus));
  return {
    container: engineContainer(input, {
      image: input.engine.image ?? sglangDefaults.image,
      command: input.engine.command ?? ['python3', '-m', 'sglang.launch_server'],
      args: [...args, ...user],
      ...healthProbes('/health'),
      volumeMounts: [{ name: 'dshm', mountPath: '/dev/shm' }],
    }),
    volumes: [shmVolume],
  };
}
