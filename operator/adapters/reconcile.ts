// The effects of reconciling an adapter Model (after its Model plan, operator/reconcile/plan.ts): ask each
// ready base engine what it holds, load the adapter where it is missing, and publish it on the
// pods that hold it; once the Model is deleted, unload it from those that list it. Shared by the
// Kubernetes runtime (base pods from the base's EndpointSlices) and the local runtime (the base's
// simulator processes).
import type { Model } from '../model/model.ts';
import type { Plan } from '../reconcile/plan.ts';
import { applyLoads, applyUnloads, loadedAdapters } from './apply.ts';
import { type BasePod, planAdapter } from './plan.ts';
import { afterLoads, baseState, loraName, publishAdapter } from './publish.ts';
import { holdFinalizer, planAdapterRemoval, type RetriedPlan } from './removal.ts';

/**
 * The base's ready engines and what each holds. One that does not answer GET /v1/models is ready
 * to Kubernetes but cannot take an adapter: nothing is loaded there, and why is kept for the status.
 */
async function observe(urls: readonly string[]): Promise<BasePod[]> {
  return Promise.all(
    urls.map(async (url): Promise<BasePod> => {
      try {
        const loaded = await loadedAdapters(url, AbortSignal.timeout(10_000));
        return { name: url, url, ready: true, terminating: false, loaded };
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        return { name: url, url, ready: true, terminating: false, loaded: [], unanswered: why };
      }
    }),
  );
}

/**
 * The plan of `model` completed for an adapter (the plan itself when `model` is no adapter or
 * catalogues nothing). `baseUrls`: the base's ready, non-terminating engine URLs. A deleted
 * adapter is unloaded before its finalizer comes off; `retry` is set while an unload failed.
 */
export async function completeAdapterPlan(
  model: Model,
  plan: Plan,
  base: Model | undefined,
  baseUrls: readonly string[],
  now: string,
): Promise<RetriedPlan> {
  const spec = model.spec.adapter;
  // The finalizer coming off is the last moment the operator sees the adapter Model.
  if (spec && model.metadata.deletionTimestamp && plan.finalizer === 'remove')
    return holdFinalizer(plan, loraName(model), await unloadAdapter(model, base, baseUrls));
  if (!spec || !plan.status || plan.catalogue.action !== 'put') return plan;
  const name = loraName(model);
  const state = baseState(base, base ? await observe(baseUrls) : []);
  const first = planAdapter(name, spec, state);
  const failures = await applyLoads(first.load);
  const after = planAdapter(name, spec, afterLoads(state, first, failures, name), failures);
  return publishAdapter(model, plan, after, base, now);
}

/**
 * Unloads adapter `model` from the base engines (of `baseUrls`) that list it; returns the
 * failures (engine URL → message). Nothing when `model` is no adapter or its base is gone.
 */
export async function unloadAdapter(
  model: Model,
  base: Model | undefined,
  baseUrls: readonly string[],
): Promise<Map<string, string>> {
  if (!model.spec.adapter) return new Map();
  const state = baseState(base, base ? await observe(baseUrls) : []);
  return applyUnloads(planAdapterRemoval(loraName(model), state));
}

/** The adapter Models that name `base` as theirs: re-planned whenever the base or its pods change. */
export function adaptersOf<M extends Model>(models: readonly M[], base: string): M[] {
  return models.filter((m) => m.spec.adapter?.base === base);
}
