// The effects of an adapter plan: ask each base pod's engine what it has loaded, and load the
// adapter where the plan says. Errors are returned per pod, never thrown: one pod that refuses must
// not stop the others, and the next plan reports it (LoadFailed).

import type { LoadAction } from './plan.ts';

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

/** Performs the loads; returns the error of each pod that failed (pod name → message). */
export async function applyLoads(actions: readonly LoadAction[]): Promise<Map<string, string>> {
  const failures = new Map<string, string>();
  await Promise.all(
    actions.map(async (a) => {
      try {
        const res = await fetch(`${a.url}/v1/load_lora_adapter`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(a.body),
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
        const text = await res.text();
        // A second load of the same name is vLLM's 400 "already been loaded": the pod holds it.
        if (!res.ok && !/already been loaded/.test(text))
          failures.set(a.pod, `${res.status} ${text.slice(0, 200)}`);
      } catch (err) {
        failures.set(a.pod, err instanceof Error ? err.message : String(err));
      }
    }),
  );
  return failures;
}
