// What every engine template receives and returns. One file per engine keeps each engine's flags,
// probes and image in one place; index.ts picks one with an exhaustive switch.
import type { V1Container, V1Probe, V1ResourceRequirements, V1Volume } from '@kubernetes/client-node';
import { mergedResources, type Placement } from '../fleet/placement.ts';
import type { EngineSpec, ModelSpec } from '../model/model.ts';

export interface EngineInput {
  spec: ModelSpec;
  engine: EngineSpec;
  /** What the engine must answer to in `model` (vLLM --served-model-name). */
  servedName: string;
  /** Weights to load: a local path (cached or mounted weights), else engine.model or the repo, defaulting to spec.id. */
  weights: string;
  /** `weights` is a path inside the pod, not a repo to download (operator/weights/). */
  localWeights?: boolean;
  /** The Hugging Face revision to download (a branch, tag or commit). */
  revision?: string;
  port: number;
  gpus: number;
  /** Where the pods go and what a profile grants them (operator/fleet/placement.ts). */
  placement?: Placement;
}

export interface EngineTemplate {
  container: V1Container;
  volumes?: V1Volume[];
}

export interface EngineDefaults {
  image: string;
  port: number;
  gpus: number;
}

/** An HTTP probe on the named container port. */
export function httpProbe(path: string, periodSeconds: number, failureThreshold: number): V1Probe {
  return { httpGet: { path, port: 'http' }, periodSeconds, failureThreshold, timeoutSeconds: 5 };
}

export function tcpProbe(periodSeconds: number, failureThreshold: number): V1Probe {
  return { tcpSocket: { port: 'http' }, periodSeconds, failureThreshold, timeoutSeconds: 5 };
}

/** Health probes for engines that load weights for minutes: a generous startup probe guards the rest. */
export function healthProbes(
  path: string,
): Pick<V1Container, 'startupProbe' | 'readinessProbe' | 'livenessProbe'> {
  return {
    startupProbe: httpProbe(path, 10, 180),
    readinessProbe: httpProbe(path, 5, 3),
    livenessProbe: httpProbe(path, 10, 6),
  };
}

/**
 * The profile's resources (times its count) under the Model's own; without a profile, `nvidia.com/gpu`
 * limits from the GPU count (GPUs are requested through limits only).
 */
export function resourcesFor(input: EngineInput): V1ResourceRequirements {
  const { requests, limits } = mergedResources(input.placement, input.engine.resources);
  if (!input.placement?.profile && input.gpus > 0) limits['nvidia.com/gpu'] = String(input.gpus);
  return {
    ...(Object.keys(requests).length ? { requests } : {}),
    ...(Object.keys(limits).length ? { limits } : {}),
  };
}

/** Plain values, or references to a Secret or ConfigMap key that the kubelet resolves. */
export function envFor(input: EngineInput): V1Container['env'] {
  return (input.engine.env ?? []).map((e) =>
    e.valueFrom ? { name: e.name, valueFrom: e.valueFrom } : { name: e.name, value: e.value ?? '' },
  );
}

/** Model-server flags the admin already set in args win over our defaults. */
export function hasFlag(args: readonly string[], flag: string): boolean {
  return args.some((a) => a === flag || a.startsWith(`${flag}=`));
}

export const shmVolume: V1Volume = { name: 'dshm', emptyDir: { medium: 'Memory' } };

/**
 * What every engine container shares: its name, env, the `http` port the probes and Service use,
 * resources, and the admin's command. `own` holds the engine's image, args, probes and mounts.
 */
export function engineContainer(
  input: EngineInput,
  own: Omit<V1Container, 'name'> & { image: string },
): V1Container {
  return {
    name: 'engine',
    ...(input.engine.command ? { command: input.engine.command } : {}),
    env: envFor(input),
    ...(input.engine.envFrom?.length ? { envFrom: input.engine.envFrom } : {}),
    ports: [{ name: 'http', containerPort: input.port, protocol: 'TCP' }],
    resources: resourcesFor(input),
    ...own,
  };
}
