// The modelplane simulator (engines/simulator): no GPU, no weights, answers for any model name and
// lists the served name on /v1/models. The image's entrypoint runs it (images/, `make images`);
// the local runtime runs it as a node process (operator/local/engine-command.ts). It stands in for
// vLLM: a chat Model's pods publish KV events on the same wire (./kv-events-flags.ts), it drains
// on the same flag, loads LoRAs at runtime and exports vLLM's load metrics, so the proxies' prefix
// index, the autoscaler and adapters run in a cluster of simulators as they do on GPUs.
import { kvEventsArgs, kvEventsContainerPorts } from './kv-events-flags.ts';
import {
  type EngineDefaults,
  type EngineInput,
  type EngineKind,
  type EngineTemplate,
  engineContainer,
  httpProbe,
  type KvEventsFlags,
} from './types.ts';
import { VLLM_LOAD_METRICS } from './vllm.ts';

const defaults: EngineDefaults = {
  // The chart sets OPERATOR_SIMULATOR_IMAGE from image.registry and image.tag, so simulator Models
  // run the image built and pushed with the platform's own (docs/install.md).
  image: process.env.OPERATOR_SIMULATOR_IMAGE || 'ghcr.io/modelplane/simulator:dev',
  port: 9000,
  gpus: 0,
};

/** Its topic is kv@<model>, the served name it is started with. */
const kvEvents: KvEventsFlags = {
  ownFlag: '--kv-events-endpoint',
  args: ({ events, replay }) => ['--kv-events-endpoint', events, '--kv-events-replay-endpoint', replay],
};

function template(input: EngineInput): EngineTemplate {
  const args = ['--host', '0.0.0.0', '--port', String(input.port), '--models', input.servedName];
  args.push(...kvEventsArgs(kvEvents, input.spec, input.engine, input.servedName));
  const container = engineContainer(input, {
    image: input.engine.image ?? defaults.image,
    // The image's own entrypoint starts the simulator (images/service.Dockerfile, `make images`:
    // node dist/engines/simulator/main.js; test/k8s/simulator.Dockerfile: tsx on the sources).
    ...(input.engine.command ? { command: input.engine.command } : {}),
    args: [...args, ...(input.engine.args ?? [])],
    readinessProbe: httpProbe('/health', 2, 3),
    livenessProbe: httpProbe('/health', 10, 6),
  });
  container.ports = [
    ...(container.ports ?? []),
    ...kvEventsContainerPorts(kvEvents, input.spec, input.engine),
  ];
  return { container };
}

export const simulator: EngineKind = {
  type: 'simulator',
  defaults,
  template,
  // engines/simulator does as vLLM does, same flag.
  drainArgs: (seconds) => ['--shutdown-timeout', String(seconds)],
  runtimeLora: true,
  kvEvents,
  // Built into the proxy (docs/routing.md "Tokenizers").
  tokenizer: { builtin: 'simulator' },
  loadMetrics: VLLM_LOAD_METRICS,
  local: ({ host, port, servedName }) => [
    '--import',
    'tsx',
    'engines/simulator/main.ts',
    '--host',
    host,
    '--port',
    String(port),
    '--models',
    servedName,
  ],
};
