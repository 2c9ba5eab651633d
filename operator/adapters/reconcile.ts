// What reconciling an adapter Model asks of its base's engines, decided without calling them
// (after its Model plan, operator/reconcile/plan.ts): load the adapter on the ready base pods that
// lack it, or, once the Model is deleted, unload it from those that list it; and the Model's plan
// the outcome settles — published on the pods that hold it, or its finalizer kept while an unload
// failed. Pure: the runtimes observe the base's pods first (./apply.ts observeBasePods), and apply
// makes the calls once the finalizer is on (operator/kube/apply.ts; the local runtime, which has
// none, straight away), then applies the settled plan.
import type { Model } from '../model/model.ts';
import type { Plan } from '../reconcile/plan.ts';
import { type BasePod, type LoadAction, planAdapter } from './plan.ts';
import { afterLoads, baseState, loraName, publishAdapter } from './publish.ts';
import { holdFinalizer, planAdapterRemoval, type RetriedPlan, type UnloadAction } from './removal.ts';

/** A Model's plan with the engine calls it waits on (none for a Model that is no adapter). */
export interface AdapterStep {
  /** The plan before the calls: apply adds its finalizer before making any. */
  plan: Plan;
  load: LoadAction[];
  unload: UnloadAction[];
  /** The plan to apply once the calls were made; `failures`: pod → error (./apply.ts). */
  settle(failures: ReadonlyMap<string, string>): RetriedPlan;
}

/**
 * The step for `model` (its plan unchanged when it is no adapter or catalogues nothing). `pods`:
 * the base's ready, non-terminating engines as observed. A deleted adapter is unloaded before its
 * finalizer comes off; the settled plan's `retry` is set while an unload failed.
 */
export function planAdapterStep(
  model: Model,
  plan: Plan,
  base: Model | undefined,
  pods: readonly BasePod[],
  now: string,
): AdapterStep {
  const spec = model.spec.adapter;
  const name = loraName(model);
  // The finalizer coming off is the last moment the operator sees the adapter Model.
  if (spec && model.metadata.deletionTimestamp && plan.finalizer === 'remove')
    return {
      plan,
      load: [],
      unload: planAdapterRemoval(name, baseState(base, pods)),
      settle: (failures) => holdFinalizer(plan, name, failures),
    };
  if (!spec || !plan.status || plan.catalogue.action !== 'put')
    return { plan, load: [], unload: [], settle: () => plan };
  const state = baseState(base, pods);
  const first = planAdapter(name, spec, state);
  return {
    plan,
    load: first.load,
    unload: [],
    settle: (failures) => {
      const after = planAdapter(name, spec, afterLoads(state, first, failures, name), failures);
      return publishAdapter(model, plan, after, base, now);
    },
  };
}

/** The unloads of adapter `model` when it goes with no finalizer to hold (the local runtime's removed file). */
export function adapterUnloads(
  model: Model,
  base: Model | undefined,
  pods: readonly BasePod[],
): UnloadAction[] {
  if (!model.spec.adapter) return [];
  return planAdapterRemoval(loraName(model), baseState(base, pods));
}

/** The adapter Models that name `base` as theirs: re-planned whenever the base or its pods change. */
export function adaptersOf<M extends Model>(models: readonly M[], base: string): M[] {
  return models.filter((m) => m.spec.adapter?.base === base);
}
