// What an adapter Model publishes once its loads were tried: its own catalogue entry (its id, its
// prices, its availability) whose endpoints are the base pods that hold it, so the proxy only ever
// sends it where the engine knows its name; and a status saying where it is loaded and why not.
// Pure: the reconciler (./reconcile.ts) passes the plan after the loads.
import { builtinTokenizer } from '../engines/index.ts';
import type { Model } from '../model/model.ts';
import { type ConditionInput, condition, withTransitions } from '../model/status.ts';
import type { Plan } from '../reconcile/plan.ts';
import type { AdapterPlan, BasePod, BaseState } from './plan.ts';

/** The name the adapter is loaded under and the proxy sends as `model`: its served name or id. */
export const loraName = (model: Model) => model.spec.servedName ?? model.spec.id;

/** The base as planAdapter reads it; a base being deleted counts as missing. */
export function baseState(base: Model | undefined, pods: readonly BasePod[]): BaseState {
  if (!base || base.metadata.deletionTimestamp) return { exists: false };
  return { exists: true, runtimeLoading: base.spec.engine?.lora !== undefined, pods };
}

/** The state after the loads: each pod that took the adapter now lists it. */
export function afterLoads(
  state: BaseState,
  plan: AdapterPlan,
  failures: ReadonlyMap<string, string>,
  name: string,
): BaseState {
  if (!state.exists) return state;
  const loaded = new Set(plan.load.filter((a) => !failures.has(a.pod)).map((a) => a.pod));
  return {
    ...state,
    pods: state.pods.map((p) => (loaded.has(p.name) ? { ...p, loaded: [...p.loaded, name] } : p)),
  };
}

const degradedReasons = new Set(['BaseMissing', 'BaseCannotLoadAdapters', 'LoadFailed']);

/**
 * The Model's plan with the adapter's catalogue entry and status. A plan that catalogues nothing
 * (the Model is being deleted, or its id is another Model's) is left as it is.
 */
export function publishAdapter(
  model: Model,
  plan: Plan,
  adapter: AdapterPlan,
  base: Model | undefined,
  now: string,
): Plan {
  if (!plan.status || plan.catalogue.action !== 'put') return plan;
  const holders = adapter.holders.sort();
  // The tokenizer is the base engine's, when the proxy knows it (the simulator's).
  const tokenizer = builtinTokenizer(base?.spec.engine);
  const entry = {
    ...plan.catalogue.entry,
    endpoints: holders.map((url) => ({ url })),
    ...(tokenizer ? { tokenizer } : {}),
  };
  const c = adapter.condition;
  const held = holders.length > 0;
  const aliasProblem = plan.status.conditions?.find((x) => x.type === 'Degraded' && x.status === 'True');
  const next: ConditionInput[] = [
    condition(
      'Ready',
      held,
      held ? 'AdapterLoaded' : c.reason,
      held ? `catalogued; ${c.message}` : c.message,
    ),
    condition(
      'Progressing',
      c.reason === 'Loading',
      c.reason === 'Loading' ? 'Loading' : 'Stable',
      c.message,
    ),
    degradedReasons.has(c.reason)
      ? condition('Degraded', true, c.reason, c.message)
      : aliasProblem
        ? { type: 'Degraded', status: 'True', reason: aliasProblem.reason, message: aliasProblem.message }
        : condition('Degraded', false, 'AsExpected', 'no problems seen'),
    { type: c.type, status: c.status, reason: c.reason, message: c.message },
  ];
  const { selector: _none, autoscaling: _never, ...rest } = plan.status;
  return {
    ...plan,
    catalogue: { action: 'put', entry },
    status: {
      ...rest,
      // Replicas of an adapter: the base pods that hold it (kubectl get models' Available).
      replicas: holders.length,
      readyReplicas: holders.length,
      endpoints: holders,
      conditions: withTransitions(next, model.status?.conditions, now, model.metadata.generation),
    },
    reasons: [...plan.reasons, `adapter ${loraName(model)}: ${c.message}`],
  };
}
