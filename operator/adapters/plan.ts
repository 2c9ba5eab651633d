// What the operator does for a Model that is a LoRA adapter of another: no Deployment of its own;
// it is loaded at runtime (vLLM's POST /v1/load_lora_adapter) on each ready pod of its base, and
// reloaded on a pod that came up without it. Pure: the caller lists the base's pods and what each
// engine reports loaded (its /v1/models), and apply performs the loads this returns.

/** A Model's `adapter` field: the base Model's name and where the engine reads the adapter from. */
export interface AdapterSpec {
  base: string;
  /** A Hugging Face id, a URL or a path inside the engine container, passed as vLLM's lora_path. */
  source: string;
}

/** One pod of the base, as the operator last saw it. */
export interface BasePod {
  name: string;
  url: string;
  ready: boolean;
  /** Being deleted: loading onto it would be wasted and it must not be recorded as a holder. */
  terminating: boolean;
  /** Adapter names its engine lists as loaded (GET /v1/models entries whose parent is the base). */
  loaded: readonly string[];
  /**
   * Why a ready pod's engine did not answer GET /v1/models (a hung or crashed engine behind a
   * readiness probe not yet failed): nothing is loaded there, and the Model says so.
   */
  unanswered?: string;
}

/** What the operator knows of the base Model: absent, or present with its pods. */
export type BaseState =
  | { exists: false }
  | { exists: true; runtimeLoading: boolean; pods: readonly BasePod[] };

export interface LoadAction {
  pod: string;
  url: string;
  /** vLLM's body: the adapter is served under its own Model name, which is its catalogue id. */
  body: { lora_name: string; lora_path: string };
}

export interface AdapterCondition {
  type: 'AdapterLoaded';
  status: 'True' | 'False';
  reason:
    | 'Loaded'
    | 'BaseMissing'
    | 'BaseCannotLoadAdapters'
    | 'NoReadyBasePods'
    | 'BaseNotAnswering'
    | 'Loading'
    | 'LoadFailed';
  message: string;
}

export interface AdapterPlan {
  load: LoadAction[];
  /** Pods that hold the adapter now: what the catalogue publishes so the proxy prefers them. */
  holders: string[];
  condition: AdapterCondition;
}

/**
 * @param failures the last load error per pod (from apply), so a pod that refused the adapter is
 *   reported rather than retried silently; it is retried all the same, since a new engine may accept it.
 */
export function planAdapter(
  name: string,
  spec: AdapterSpec,
  base: BaseState,
  failures: ReadonlyMap<string, string> = new Map(),
): AdapterPlan {
  const cond = (status: boolean, reason: AdapterCondition['reason'], message: string): AdapterCondition => ({
    type: 'AdapterLoaded',
    status: status ? 'True' : 'False',
    reason,
    message,
  });
  if (!base.exists)
    return {
      load: [],
      holders: [],
      condition: cond(false, 'BaseMissing', `base model ${spec.base} does not exist`),
    };
  if (!base.runtimeLoading)
    return {
      load: [],
      holders: [],
      condition: cond(
        false,
        'BaseCannotLoadAdapters',
        `base model ${spec.base} does not allow runtime LoRA loading (--enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING)`,
      ),
    };
  const ready = base.pods.filter((p) => p.ready && !p.terminating);
  const live = ready.filter((p) => p.unanswered === undefined);
  const holders = live.filter((p) => p.loaded.includes(name)).map((p) => p.name);
  const load = live
    .filter((p) => !p.loaded.includes(name))
    .map((p) => ({ pod: p.name, url: p.url, body: { lora_name: name, lora_path: spec.source } }));
  if (ready.length === 0)
    return {
      load,
      holders,
      condition: cond(false, 'NoReadyBasePods', `base model ${spec.base} has no ready pod`),
    };
  if (live.length === 0) {
    const first = ready[0]!;
    return {
      load,
      holders,
      condition: cond(
        false,
        'BaseNotAnswering',
        `base model ${spec.base} has ${ready.length} ready pod(s), but no engine answers GET /v1/models (${first.name}: ${first.unanswered})`,
      ),
    };
  }
  const failed = load.filter((a) => failures.has(a.pod));
  if (holders.length === 0 && failed.length > 0) {
    const first = failed[0]!;
    return {
      load,
      holders,
      condition: cond(false, 'LoadFailed', `loading on ${first.pod} failed: ${failures.get(first.pod)}`),
    };
  }
  if (holders.length === 0)
    return {
      load,
      holders,
      condition: cond(false, 'Loading', `loading on ${load.length} pod(s) of ${spec.base}`),
    };
  return {
    load,
    holders,
    condition: cond(
      true,
      'Loaded',
      `loaded on ${holders.length} of ${live.length} ready pod(s) of ${spec.base}`,
    ),
  };
}
