// What an engine kind is (EngineKind: every trait of one kind, in one file per kind; ./index.ts holds
// the table), and what its template receives and returns.
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

/** A kind's KV-cache events (./kv-events-flags.ts publishes them on the ports the Service names). */
export interface KvEventsFlags {
  /** The flag whose presence in the admin's args means the events are theirs to configure. */
  ownFlag: string;
  /** The flags that publish on `events` (ZMQ PUB) and answer replays on `replay`, under `topic`. */
  args(endpoints: { events: string; replay: string }, topic: string): string[];
}

/**
 * A rule a Model of this kind must keep, beside the Model's own (operator/model/rules.ts): CEL with
 * `self` = the spec (the table adds "this kind's engine" before it, joined by `||`, so the CEL is
 * an expression of `||`, `&&` and calls only), and the same rule in TypeScript for the local runtime.
 */
export interface KindRule {
  cel: string;
  message: string;
  holds(engine: EngineSpec): boolean;
}

/**
 * Every trait of one engine kind: a new kind is one file exporting one of these and one line in
 * ./index.ts's table. Traits left out are the ones the kind does not have.
 */
export interface EngineKind {
  /** spec.engine.type. */
  type: string;
  /** Image, port and GPUs when the Model names none. */
  defaults: EngineDefaults;
  /** The container (image, args, ports, probes, env, mounts) and its volumes. */
  template(input: EngineInput): EngineTemplate;
  /**
   * The flags that make it refuse new calls and finish in-flight ones for `seconds` on SIGTERM
   * (operator/fleet/drain.ts); absent: SIGTERM stops it, so the preStop holds the drain.
   */
  drainArgs?(seconds: number): string[];
  /** Loads LoRA adapters at runtime: spec.engine.lora is allowed (the template adds its flags). */
  runtimeLora?: true;
  /** Publishes KV-cache events for the proxies' prefix index (chat Models). */
  kvEvents?: KvEventsFlags;
  /** Downloads its weights at start: it gets the scratch volume (operator/fleet/scratch.ts). */
  downloadsWeights?: true;
  /**
   * How the proxies tokenize for it (operator/reconcile/tokenizer.ts): a tokenizer built into the
   * proxy, or the weights' Hugging Face repo (chat Models). Absent: none.
   */
  tokenizer?: { builtin: string } | 'huggingFace';
  /** Its load on /metrics (core/demand/engine-load.ts reads these names for the autoscaler and the proxies). */
  loadMetrics?: Readonly<Record<string, 'waiting' | 'running' | 'kv'>>;
  /** Runs as a local process under `make dev` (operator/local/): node's arguments for one replica. */
  local?(o: { host: string; port: number; servedName: string }): string[];
  rules?: readonly KindRule[];
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
