// How an engine pod stops without cutting a stream (after KServe's LLMInferenceService preset:
// preStop, then the server's own shutdown timeout, inside a grace that covers both). In order:
//   1. The pod is marked for deletion; its endpoint turns `terminating` and the operator drops it
//      from the catalogue, which every proxy reloads on the change message. Until then a proxy may
//      still send it a new call, so the engine must keep accepting: the preStop sleep, sized to that
//      propagation (measured on the kwok control plane, test/k8s/placement.test.ts).
//   2. SIGTERM. An engine with a drain flag refuses new calls and finishes its in-flight ones for up
//      to the Model's drain time (vLLM --shutdown-timeout, whose default 0 aborts them). An engine
//      without one would abort at SIGTERM, so its preStop also covers the drain time: no new call
//      reaches it after step 1, and the in-flight ones finish during the sleep.
//   3. The kubelet's SIGKILL at the termination grace, which covers both plus a margin.
// Pure; objects.ts and the engine templates read the result (through operator/engines/ engineDrain,
// which brings the kind's drain flag: EngineKind.drainArgs).
import type { EngineSpec } from '../model/spec.ts';

/**
 * A scale-down on the kwok control plane, from the Model's change to the catalogue without the pod
 * (a longer chain than a rollout's, which starts at the pod's deletion): 164 and 221 ms in two runs
 * on a shared 2-core machine. Proxies reload on the change message at once; 5 s leaves room for a
 * loaded API server and a proxy reconnecting to Redis.
 */
export const CATALOGUE_PROPAGATION_SECONDS = 5;
/** KServe's preset: 40 s of shutdown timeout at a 60 s grace. */
export const DEFAULT_DRAIN_SECONDS = 40;
/** Between the engine's own timeout and SIGKILL: exit, flush logs. */
const MARGIN_SECONDS = 5;

export interface DrainPlan {
  preStopSeconds: number;
  /** Flags that make the engine drain on SIGTERM (empty: the preStop holds the drain). */
  engineArgs: string[];
  terminationGracePeriodSeconds: number;
}

/** `drainArgs`: the engine kind's graceful-shutdown flag; absent when SIGTERM stops it without draining. */
export function drainFor(engine: EngineSpec, drainArgs?: (seconds: number) => string[]): DrainPlan {
  const drain = engine.drainSeconds ?? DEFAULT_DRAIN_SECONDS;
  const flag = drainArgs?.(drain) ?? null;
  const preStopSeconds = CATALOGUE_PROPAGATION_SECONDS + (flag === null ? drain : 0);
  return {
    preStopSeconds,
    engineArgs: flag ?? [],
    terminationGracePeriodSeconds: CATALOGUE_PROPAGATION_SECONDS + drain + MARGIN_SECONDS,
  };
}
