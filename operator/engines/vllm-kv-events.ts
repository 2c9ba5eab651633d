// vLLM's KV-cache events (docs/routing.md), switched on for every chat Model it serves: the
// proxies' prefix index follows them to route a conversation to the engine that holds its prefix.
// The flag is vLLM's --kv-events-config (vllm/config/kv_events.py in 0.32): a ZMQ PUB socket for
// the event batches and a ROUTER answering replays of missed ones, on fixed container ports the
// Service names `kv-events` and `kv-replay` (operator/kv-events.ts reads them back from the
// EndpointSlice into the catalogue). An admin's own --kv-events-config wins, and then no port is
// published: where it listens is theirs to say.
import type { V1ContainerPort, V1ServicePort } from '@kubernetes/client-node';
import { kvEventsTopic } from '../kv-events.ts';
import type { EngineSpec, ModelSpec } from '../model.ts';
import { hasFlag } from './types.ts';

export const KV_EVENTS_PORT = 5557;
export const KV_REPLAY_PORT = 5558;

function publishes(spec: ModelSpec, engine: EngineSpec): boolean {
  return engine.type === 'vllm' && spec.kind === 'chat' && !hasFlag(engine.args ?? [], '--kv-events-config');
}

/** The flags, or none when this Model's engine does not publish through us. */
export function vllmKvEventsArgs(spec: ModelSpec, engine: EngineSpec, servedName: string): string[] {
  if (!publishes(spec, engine)) return [];
  const config = {
    enable_kv_cache_events: true,
    publisher: 'zmq',
    endpoint: `tcp://*:${KV_EVENTS_PORT}`,
    replay_endpoint: `tcp://*:${KV_REPLAY_PORT}`,
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
