// The engines' KV-cache events (docs/routing.md), switched on for every chat Model served by an
// engine that publishes them — vLLM, and the simulator that stands in for it — so the proxies'
// prefix index follows them to route a conversation to the engine that holds its prefix. Both
// publish the same wire (a ZMQ PUB socket for the event batches, a ROUTER answering replays of
// missed ones) on fixed container ports the Service names `kv-events` and `kv-replay`
// (operator/fleet/kv-events.ts reads them back from the EndpointSlice into the catalogue):
// - vLLM: --kv-events-config (vllm/config/kv_events.py in 0.32), topic kv@<served name>;
// - the simulator: --kv-events-endpoint and --kv-events-replay-endpoint, topic kv@<model> (the
//   served name it is started with), as the local runtime starts it (operator/local/engine-command.ts).
// An admin's own flag wins, and then no port is published: where it listens is theirs to say.
import type { V1ContainerPort, V1ServicePort } from '@kubernetes/client-node';
import { kvEventsTopic } from '../fleet/kv-events.ts';
import type { EngineSpec, ModelSpec } from '../model/model.ts';
import { hasFlag } from './types.ts';

export const KV_EVENTS_PORT = 5557;
export const KV_REPLAY_PORT = 5558;

/** The flag whose presence in the admin's args means the events are theirs to configure. */
const OWN_FLAG: Partial<Record<EngineSpec['type'], string>> = {
  vllm: '--kv-events-config',
  simulator: '--kv-events-endpoint',
};

function publishes(spec: ModelSpec, engine: EngineSpec): boolean {
  const flag = OWN_FLAG[engine.type];
  return flag !== undefined && spec.kind === 'chat' && !hasFlag(engine.args ?? [], flag);
}

/** The flags, or none when this Model's engine does not publish through us. */
export function kvEventsArgs(spec: ModelSpec, engine: EngineSpec, servedName: string): string[] {
  if (!publishes(spec, engine)) return [];
  const endpoint = `tcp://*:${KV_EVENTS_PORT}`;
  const replay = `tcp://*:${KV_REPLAY_PORT}`;
  if (engine.type === 'simulator')
    return ['--kv-events-endpoint', endpoint, '--kv-events-replay-endpoint', replay];
  const config = {
    enable_kv_cache_events: true,
    publisher: 'zmq',
    endpoint,
    replay_endpoint: replay,
    topic: kvEventsTopic(servedName),
  };
  return ['--kv-events-config', JSON.stringify(config)];
}

export function kvEventsContainerPorts(spec: ModelSpec, engine: EngineSpec): V1ContainerPort[] {
  if (!publishes(spec, engine)) return [];
  return [
    { name: 'kv-events', containerPort: KV_EVENTS_PORT, protocol: 'TCP' },
    { name: 'kv-replay', containerPort: KV_REPLAY_PORT, protocol: 'TCP' },
  ];
}

export function kvEventsServicePorts(spec: ModelSpec, engine: EngineSpec): V1ServicePort[] {
  return kvEventsContainerPorts(spec, engine).map((p) => ({
    name: p.name,
    port: p.containerPort,
    targetPort: p.name as string,
    protocol: 'TCP',
  }));
}
