// Which replicas a scale-down removes: the least loaded, so the fewest calls have to drain and the
// drain ends soonest. Pure; the runtimes bring the load (each engine's own /metrics: running plus
// waiting calls, engine-load.ts) and act on the answer.
// - Kubernetes: the ReplicaSet controller picks which pods go, but it deletes pods with a lower
//   `controller.kubernetes.io/pod-deletion-cost` first, so before lowering replicas the scaler sets
//   each engine pod's cost to its calls in flight. A pod whose load is unknown (its /metrics did not
//   answer) is left without a cost: the controller's own order (not ready, newest…) decides for it.
// - Locally: the runtime stops exactly the processes named here.

export const POD_DELETION_COST = 'controller.kubernetes.io/pod-deletion-cost';

export interface ReplicaLoad {
  name: string;
  /** Calls in the engine (running + waiting); null when it did not say. */
  load: number | null;
}

/** The deletion cost to set on each replica whose load is known (an int32, as the API wants). */
export function deletionCosts(replicas: readonly ReplicaLoad[]): Map<string, string> {
  const costs = new Map<string, string>();
  for (const r of replicas) {
    if (r.load === null) continue;
    costs.set(r.name, String(Math.min(2 ** 31 - 1, Math.max(0, Math.round(r.load)))));
  }
  return costs;
}

/**
 * The `count` replicas to remove, least loaded first. An unknown load goes first too: locally a
 * process whose /metrics does not answer is not serving. Ties keep the given order (the caller
 * lists the newest last, and removes from the end as before).
 */
export function replicasToRemove(replicas: readonly ReplicaLoad[], count: number): string[] {
  if (count <= 0) return [];
  const rank = (r: ReplicaLoad) => r.load ?? -1;
  return replicas
    .map((r, i) => ({ r, i }))
    .sort((a, b) => rank(a.r) - rank(b.r) || b.i - a.i)
    .slice(0, count)
    .map(({ r }) => r.name);
}
