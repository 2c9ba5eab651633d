// The effects of reconciling an adapter Model (after its Model plan, operator/plan.ts): ask each
// ready base engine what it holds, load the adapter where it is missing, and publish it on the
// pods that hold it. Shared by the Kubernetes runtime (base pods from the base's EndpointSlices)
// and the local runtime (the base's simulator processes).
import type { Model } from '../model.ts';
import type { Plan } from '../plan.ts';
import { applyLoads, loadedAdapters } from './apply.ts';
import { type BasePod, planAdapter } from './plan.ts';
import { afterLoads, baseState, loraName, publishAdapter } from './publish.ts';

/** A base engine that does not answer GET /v1/models is taken as not ready: nothing is loaded there. */
async function observe(urls: readonly string[]): Promise<BasePod[]> {
  return Promise.all(
    urls.map(async (url) => {
      const loaded = await loadedAdapters(url, AbortSignal.timeout(10_000)).catch(() => null);
      return { name: url, url, ready: loaded !== null, terminating: false, loaded: loaded ?? [] };
    }),
  );
}

/**
 * The plan of `model` completed for an adapter (the plan itself when `model` is no adapter or
 * catalogues nothing). `baseUrls`: the base's ready, non-terminating engine URLs.
 */
export async function completeAdapterPlan(
  model: Model,
  plan: Plan,
  base: Model | undefined,
  baseUrls: readonly string[],
  now: string,
): Promise<Plan> {
  const spec = model.spec.adapter;
  if (!spec || !plan.status || plan.catalogue.action !== 'put') return plan;
  const name = loraName(model);
  const state = baseState(base, base ? await observe(baseUrls) : []);
  const first = planAdapter(name, spec, state);
  const failures = await applyLoads(first.load);
  const after = planAdapter(name, spec, afterLoads(state, first, failures, name), failures);
  return publishAdapter(model, plan, after, base, now);
}

/** The adapter Models that name `base` as theirs: re-planned whenever the base or its pods change. */
export function adaptersOf<M extends Model>(models: readonly M[], base: string): M[] {
  return models.filter((m) => m.spec.adapter?.base === base);
}
