// What the operator does when an adapter Model goes away: unload it (vLLM's POST
// /v1/unload_lora_adapter) from each live base pod that still lists it, so the engine stops serving
// a name nobody publishes and frees its adapter slot (vLLM keeps up to --max-cpu-loras of them).
// Pure: the caller observes the base's pods, ./apply.ts performs the unloads, and holdFinalizer
// decides from their outcome whether the Model's finalizer may come off.
import type { Plan } from '../reconcile/plan.ts';
import type { BaseState } from './plan.ts';

export interface UnloadAction {
  pod: string;
  url: string;
  body: { lora_name: string };
}

/**
 * The unloads of adapter `name`: every ready, non-terminating base pod that lists it. A base that is
 * gone or being deleted takes its engines (and so the adapter) with it: nothing to unload there.
 */
export function planAdapterRemoval(name: string, base: BaseState): UnloadAction[] {
  if (!base.exists) return [];
  return base.pods
    .filter((p) => p.ready && !p.terminating && p.unanswered === undefined && p.loaded.includes(name))
    .map((p) => ({ pod: p.name, url: p.url, body: { lora_name: name } }));
}

/** A plan the caller runs again after a backoff (why: `retry`), having applied it. */
export type RetriedPlan = Plan & { retry?: string };

/**
 * The deleting Model's plan after the unloads: the finalizer stays while a pod that lists the
 * adapter refused to drop it (the catalogue entry still goes, so no call is sent there), and
 * the unload is tried again; once every listing pod dropped it, the plan is left as it is.
 */
export function holdFinalizer(plan: Plan, name: string, failures: ReadonlyMap<string, string>): RetriedPlan {
  const first = [...failures][0];
  if (!first) return plan;
  const why = `adapter ${name}: unloading on ${first[0]} failed: ${first[1]}`;
  return {
    ...plan,
    finalizer: 'none',
    reasons: [...plan.reasons, `${why}; the finalizer stays until every base pod has dropped it`],
    retry: why,
  };
}
