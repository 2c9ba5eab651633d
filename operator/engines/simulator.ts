// The modelplane simulator (engines/simulator): no GPU, no weights, answers for any model name and
// lists the served name on /v1/models. The image is the repo with its node_modules.
import {
  type EngineDefaults,
  type EngineInput,
  type EngineTemplate,
  engineContainer,
  httpProbe,
} from './types.ts';

export const simulatorDefaults: EngineDefaults = {
  image: 'ghcr.io/modelplane/simulator:dev',
  port: 9000,
  gpus: 0,
};

export function simulatorTemplate(input: EngineInput): EngineTemplate {
  const args = ['--host', '0.0.0.0', '--port', String(input.port), '--models', input.servedName];
  return {
    container: engineContainer(input, {
      image: input.engine.image ?? simulatorDefaults.image,
      command: input.engine.command ?? ['npx', 'tsx', 'engines/simulator/main.ts'],
      args: [...args, ...(input.engine.args ?? [])],
      readinessProbe: httpProbe('/health', 2, 3),
      livenessProbe: httpProbe('/health', 10, 6),
    }),
  };
}
