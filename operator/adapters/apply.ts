// The effects of an adapter plan: ask each base pod's engine what it has loaded (before the plan),
// and load (or, once the adapter Model is deleted, unload) the adapter where the plan says (after
// the finalizer is on: operator/kube/apply.ts, the local runtime). Errors are returned per pod,
// never thrown: one pod that refuses must not stop the others, and the settled plan reports it
// (LoadFailed) or keeps the deleted Model's finalizer (./removal.ts).

import type { BasePod, LoadAction } from './plan.ts';
import type { AdapterStep } from './reconcile.ts';
import type { RetriedPlan, UnloadAction } from './removal.ts';

const TIMEOUT_MS = 30_000;

/** The adapter names an engine lists as loaded: /v1/models entries with a parent (vLLM's LoRA entries). */
export async function loadedAdapters(url: string, signal?: AbortSignal): Promise<string[]> {
  const res = await fetch(`${url}/v1/models`, { signal: signal ?? AbortSignal.timeout(TIMEOUT_MS) });
  if (!res.ok) throw new Error(`GET /v1/models: ${res.status}`);
  const body = (await res.json()) as { data?: { id?: unknown; parent?: unknown }[] };
  return (body.data ?? [])
    .filter((m) => typeof m.id === 'string' && typeof m.parent === 'string')
    .map((m) => m.id as string);
}

/** The base's pods for the plan (./reconcile.ts): an engine that does not answer GET /v1/models is taken as not ready. */
export async function observeBasePods(urls: readonly string[]): Promise<BasePod[]> {
  // One that does not answer GET /v1/models is ready to Kubernetes but cannot take an adapter:
  // nothing is loaded there, and why is kept for the status (./plan.ts BaseNotAnswering).
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

/** Makes the step's engine calls and returns the plan their outcome settles (no call: the plan as it was). */
export async function applyAdapterStep(step: AdapterStep): Promise<RetriedPlan> {
  if (step.unload.length > 0) return step.settle(await applyUnloads(step.unload));
  if (step.load.length > 0) return step.settle(await applyLoads(step.load));
  return step.settle(new Map());
}

/**
 * POSTs each action's body to `path` on its pod; an answer `done` accepts counts as success.
 * Returns the error of each pod that failed (pod name → message).
 */
async function post(
  actions: readonly (LoadAction | UnloadAction)[],
  path: string,
  done: (status: number, text: string) => boolean,
): Promise<Map<string, string>> {
  const failures = new Map<string, string>();
  await Promise.all(
    actions.map(async (a) => {
      try {
        const res = await fetch(`${a.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(a.body),
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
        const text = await res.text();
        if (!res.ok && !done(res.status, text)) failures.set(a.pod, `${res.status} ${text.slice(0, 200)}`);
      } catch (err) {
        failures.set(a.pod, err instanceof Error ? err.message : String(err));
      }
    }),
  );
  return failures;
}

/** Performs the loads. A second load of the same name is vLLM's 400 "already been loaded": the pod holds it. */
export const applyLoads = (actions: readonly LoadAction[]) =>
  post(actions, '/v1/load_lora_adapter', (_status, text) => /already been loaded/.test(text));

/** Performs the unloads. vLLM's 404 (the adapter "cannot be found") means the pod no longer holds it. */
export const applyUnloads = (actions: readonly UnloadAction[]) =>
  post(actions, '/v1/unload_lora_adapter', (status) => status === 404);
