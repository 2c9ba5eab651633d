// The Kubernetes objects one Model owns: a Deployment of engine pods and a Service whose
// EndpointSlices tell us which pods are ready. Pure builders; apply.ts sends them.
import type { V1Deployment, V1Service } from '@kubernetes/client-node';
import { engineDrain, engineKind, enginePort, engineTemplate } from '../engines/index.ts';
import { kvEventsServicePorts } from '../engines/kv-events-flags.ts';
import type { Placement } from '../fleet/placement.ts';
import { withScratch } from '../fleet/scratch.ts';
import type { EngineSpec, Model } from '../model/model.ts';
import { ID_ANNOTATION, MANAGED_BY, ownedName, ownerReference, podSelector } from '../model/owned.ts';
import type { EngineWeights } from '../weights/engine.ts';

/** Desired replicas: spec.engine.replicas (what `kubectl scale` writes) kept within min/max. */
export function desiredReplicas(engine: EngineSpec): number {
  const wanted = engine.replicas ?? engine.minReplicas ?? 1;
  const min = engine.minReplicas ?? 0;
  const max = engine.maxReplicas ?? Number.POSITIVE_INFINITY;
  return Math.min(Math.max(wanted, min), max);
}

function metadata(model: Model) {
  return {
    name: ownedName(model),
    namespace: model.metadata.namespace ?? 'default',
    labels: { ...MANAGED_BY, 'app.kubernetes.io/name': 'modelplane-engine', ...podSelector(model) },
    annotations: { [ID_ANNOTATION]: model.spec.id },
    ownerReferences: [ownerReference(model)],
  };
}

export function deploymentFor(
  model: Model,
  engine: EngineSpec,
  placement?: Placement,
  weights?: EngineWeights | null,
): V1Deployment {
  const { container, volumes: own } = engineTemplate(model.spec, engine, placement, weights);
  const mounted = [...(own ?? []), ...(weights?.volumes ?? [])];
  const volumes = engineKind(engine.type).downloadsWeights
    ? withScratch(engine, container, mounted)
    : mounted;
  if (weights) {
    container.volumeMounts = [...(container.volumeMounts ?? []), ...weights.mounts];
    // A custom image finds its weights here too.
    container.env = [
      ...(container.env ?? []),
      ...weights.env,
      { name: 'MODELPLANE_WEIGHTS', value: weights.ref },
    ];
  }
  const meta = metadata(model);
  const drain = engineDrain(engine);
  // The pod keeps serving while its removal reaches every proxy (drain.ts).
  container.lifecycle = { preStop: { sleep: { seconds: drain.preStopSeconds } } };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta,
    spec: {
      replicas: desiredReplicas(engine),
      selector: { matchLabels: podSelector(model) },
      ...(engine.rollout
        ? { strategy: { type: 'RollingUpdate', rollingUpdate: { ...engine.rollout } } }
        : {}),
      template: {
        metadata: { labels: meta.labels, annotations: meta.annotations },
        spec: {
          ...placement?.pod,
          containers: [container],
          ...(volumes.length ? { volumes } : {}),
          // preStop, then the engine's own drain, then a margin: SIGKILL never cuts a draining stream.
          terminationGracePeriodSeconds: drain.terminationGracePeriodSeconds,
        },
      },
    },
  };
}

export function serviceFor(model: Model, engine: EngineSpec): V1Service {
  const port = enginePort(engine);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: metadata(model),
    spec: {
      type: 'ClusterIP',
      selector: podSelector(model),
      ports: [
        { name: 'http', port, targetPort: 'http', protocol: 'TCP' },
        // Where a vLLM publishes its KV events; the EndpointSlice carries them to the catalogue.
        ...kvEventsServicePorts(engineKind(engine.type).kvEvents, model.spec, engine),
      ],
    },
  };
}
