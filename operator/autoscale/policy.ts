// A Model's autoscaling fields with their defaults (docs/autoscaling.md), read in one place: the
// scaler's policy, and the cold-start hold the catalogue entry tells the proxies about.
import type { QueueLimits } from '../../core/catalogue/entry.ts';
import type { EngineSpec } from '../model/model.ts';
import type { AutoscalePolicy } from './decide.ts';

export const AUTOSCALING_DEFAULTS = {
  targetInFlight: 8,
  scaleDownDelaySeconds: 30,
  windowSeconds: 60,
  idleSeconds: 300,
  coldStartTimeoutSeconds: 300,
} as const;

/** The policy the operator scales this engine by; null when it does not (no autoscaling, or KEDA/HPA writes replicas). */
export function autoscalePolicy(engine: EngineSpec | undefined): AutoscalePolicy | null {
  const a = engine?.autoscaling;
  if (engine === undefined || a === undefined || a.writer === 'external') return null;
  const d = AUTOSCALING_DEFAULTS;
  const min = engine.minReplicas ?? 0;
  return {
    min,
    // The CRD requires maxReplicas with autoscaling; min is the floor should it be lower.
    max: Math.max(min, engine.maxReplicas ?? min),
    targetInFlight: a.targetInFlight ?? d.targetInFlight,
    scaleDownDelayMs: (a.scaleDownDelaySeconds ?? d.scaleDownDelaySeconds) * 1000,
    windowMs: (a.windowSeconds ?? d.windowSeconds) * 1000,
    idleMs: (a.idleSeconds ?? d.idleSeconds) * 1000,
  };
}

/**
 * How long a proxy holds a call for this model while it has no ready endpoint; undefined when it
 * cannot be scaled to zero (no endpoint is then a restart, answered at once with a retryable 500).
 * KEDA or an HPA may scale to zero too, so an external writer's model is held the same way.
 */
export function coldStartTimeoutMs(engine: EngineSpec | undefined): number | undefined {
  const a = engine?.autoscaling;
  if (a === undefined || (engine?.minReplicas ?? 0) > 0) return undefined;
  return (a.coldStartTimeoutSeconds ?? AUTOSCALING_DEFAULTS.coldStartTimeoutSeconds) * 1000;
}

/** The catalogue's fair-queue limits for this engine (undefined: no queue). */
export function queueLimits(engine: EngineSpec | undefined): QueueLimits | undefined {
  const q = engine?.queue;
  if (q === undefined) return undefined;
  return {
    perReplica: q.perReplica,
    maxQueued: q.maxQueued ?? 100,
    maxQueuedBytes: q.maxQueuedBytes ?? 16 * 1024 * 1024,
    maxWaitMs: (q.maxWaitSeconds ?? 30) * 1000,
  };
}
