// The engines' KV-cache events (docs/routing.md), switched on for every chat Model served by a kind
// that publishes them (EngineKind.kvEvents: vLLM, and the simulator that stands in for it), so the
// proxies' prefix index follows them to route a conversation to the engine that holds its prefix.
// They publish the same wire (a ZMQ PUB socket for the event batches, a ROUTER answering replays
// of missed ones) on fixed container ports the Service names `kv-events` and `kv-replay`
// (operator/fleet/kv-events.ts reads them back from the EndpointSlice into the catalogue); each
// kind's file spells its flags. An admin's own flag wins, and then no port is published: where it
// listens is theirs to say.
import type { V1ContainerPort, V1ServicePort } from '@kubernetes/client-node';
import { kvEventsTopic } from '../fleet/kv-events.ts';
import type { EngineSpec, ModelSpec } from '../model/model.ts';
import { hasFlag, type KvEventsFlags } from './types.ts';

export const KV_EVENTS_PORT = 5557;
export const KV_REPLAY_PORT = 5558;

function publishes(
  flags: KvEventsFlags | undefined,
  spec: ModelSpec,
  engine: EngineSpec,
): flags is KvEventsFlags {
  return flags !== undefined && spec.kind === 'chat' && !hasFlag(engine.args ?? [], flags.ownFlag);
}

/** The flags, or none when this Model's engine does not publish through us. */
export function kvEventsArgs(
  flags: KvEventsFlags | undefined,
  spec: ModelSpec,
  engine: EngineSpec,
  servedName: string,
): string[] {
  if (!publishes(flags, spec, engine)) return [];
  const endpoints = { events: `tcp://*:${KV_EVENTS_PORT}`, replay: `tcp://*:${KV_REPLAY_PORT}` };
  return flags.args(endpoints, kvEventsTopic(servedName));
}

export function kvEventsContainerPorts(
  flags: KvEventsFlags | undefined,
  spec: ModelSpec,
  engine: EngineSpec,
): V1ContainerPort[] {
  if (!publishes(flags, spec, engine)) return [];
  return [
    { name: 'kv-events', containerPort: KV_EVENTS_PORT, protocol: 'TCP' },
    { name: 'kv-replay', containerPort: KV_REPLAY_PORT, protocol: 'TCP' },
  ];
}

export function kvEventsServicePorts(
  flags: KvEventsFlags | undefined,
  spec: ModelSpec,
  engine: EngineSpec,
): V1ServicePort[] {
  return kvEventsContainerPorts(flags, spec, engine).map((p) => ({
    name: p.name,
    port: p.containerPort,
    targetPort: p.name as string,
    protocol: 'TCP',
  }));
}
