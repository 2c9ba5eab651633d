// What the GPU LLM servers (vLLM, SGLang) share: started on the Model's weights under its served
// name, listening on every address at the engine's port, with the context length and tensor
// parallelism the Model implies unless its own args already set them (each server spells those
// flags its own way); health on /health; /dev/shm enlarged for tensor parallelism.
import type { V1Container } from '@kubernetes/client-node';
import {
  type EngineInput,
  type EngineTemplate,
  engineContainer,
  hasFlag,
  healthProbes,
  shmVolume,
} from './types.ts';

/** A server's spelling of the flags the shared arguments use. */
export interface GpuServerFlags {
  /** Names the weights (`--model`, `--model-path`). */
  model: string;
  contextLength: string;
  tensorParallel: string;
}

/** The shared arguments, `extra` (the server's own always-on flags) after the port; the Model's args not included. */
export function gpuServerArgs(input: EngineInput, flags: GpuServerFlags, extra: readonly string[]): string[] {
  const user = input.engine.args ?? [];
  const args = [flags.model, input.weights, '--served-model-name', input.servedName, '--host', '0.0.0.0'];
  args.push('--port', String(input.port), ...extra);
  // Both servers download with huggingface_hub and take its revision under this flag.
  if (input.revision && !hasFlag(user, '--revision')) args.push('--revision', input.revision);
  if (input.spec.contextLength && !hasFlag(user, flags.contextLength))
    args.push(flags.contextLength, String(input.spec.contextLength));
  if (input.gpus > 1 && !hasFlag(user, flags.tensorParallel))
    args.push(flags.tensorParallel, String(input.gpus));
  return args;
}

/** The server's container (its args followed by the Model's own) with the shared probes and /dev/shm. */
export function gpuServerTemplate(
  input: EngineInput,
  c: { image: string; command?: string[]; args: readonly string[] },
): EngineTemplate {
  const container: V1Container = engineContainer(input, {
    image: c.image,
    ...(c.command === undefined ? {} : { command: c.command }),
    args: [...c.args, ...(input.engine.args ?? [])],
    ...healthProbes('/health'),
    volumeMounts: [{ name: 'dshm', mountPath: '/dev/shm' }],
  });
  return { container, volumes: [shmVolume] };
}
