// How an engine container reaches its weights (decided by ./plan.ts, applied by operator/reconcile/objects.ts
// and the engine templates). On its own so the engine side imports no planning code.
import type { V1EnvVar, V1Volume, V1VolumeMount } from '@kubernetes/client-node';

/** How the engine container reaches its weights. */
export interface EngineWeights {
  /** What the engine's model flag names: a local path, or a repo the engine downloads. */
  ref: string;
  local: boolean;
  revision?: string;
  volumes: V1Volume[];
  mounts: V1VolumeMount[];
  env: V1EnvVar[];
}
