// The modelplane simulator (engines/simulator): no GPU, no weights, answers for any model name and
// lists the served name on /v1/models. The image's entrypoint runs it (images/, `make images`).
// A chat Model's pods publish KV events as vLLM's do (./kv-events-flags.ts), so the proxies' prefix
// index runs in a cluster of simulators as it does on GPUs.
import { kvEventsArgs, kvEventsContainerPorts } from './kv-events-flags.ts';
import {
  type EngineDefaults,
  type EngineInput,
  type EngineTemplate,
  engineContainer,
  httpProbe,
} from './types.ts';

export const simulatorDefaults: EngineDefaults = {
  // The chart sets OPERATOR_SIMULATOR_IMAGE from image.registry and image.tag, so simulator Models
  // run the image built and pushed with the platform's own (docs/install.md).
  image: process.env.OPERATOR_SIMULATOR_IMAGE || 'ghcr.io/modelplane/simulator:dev',
  port: 9000,
  gpus: 0,
};

export function simulatorTemplate(input: EngineInput): EngineTemplate {
  const args = ['--host', '0.0.0.0', '--port', String(input.port), '--models', input.servedName];
  args.push(...kvEventsArgs(input.spec, input.engine, input.servedName));
  const container = engineContainer(input, {
    image: input.engine.image ?? simulatorDefaults.image,
    // The image's own entrypoint starts the simulator (images/service.Dockerfile, `make images`:
    // node dist/engines/simulator/main.js; test/k8s/simulator.Dockerfile: tsx on the sources).
    ...(input.engine.command ? { command: input.engine.command } : {}),
    args: [...args, ...(input.engine.args ?? [])],
    readinessProbe: httpProbe('/health', 2, 3),
    livenessProbe: httpProbe('/health', 10, 6),
  });
  container.ports = [...(container.ports ?? []), ...kvEventsContainerPorts(input.spec, input.engine)];
  return { container };
}
