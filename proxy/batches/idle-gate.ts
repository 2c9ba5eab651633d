// When a batch line may start (docs/batches.md "Idle capacity"): batch lines are the lowest
// priority, admitted only while the model's interactive calls are few — fewer than
// BATCH_IDLE_BELOW in flight per endpoint — and at most BATCH_CONCURRENCY lines at once. The signal
// is this replica's own in-flight count per endpoint (the endpoint picker's), less the batch's own
// lines: the runner is one leader, and interactive load spreads evenly over the replicas. A
// fleet-wide demand signal (per-model queues in Redis) can replace `interactive` here alone.
import type { CatalogueEntry } from '../../core/catalogue/index.ts';
import type { EndpointPicker } from '../engine/picker.ts';

export interface GateLimits {
  idleBelow: number;
  concurrency: number;
}

/** Pure: may one more line start, given the load now. */
export function mayAdmit(
  load: { interactive: number; lines: number; endpoints: number },
  limits: GateLimits,
): boolean {
  if (load.lines >= limits.concurrency) return false;
  return load.interactive < limits.idleBelow * Math.max(1, load.endpoints);
}

/** Interactive calls in flight on the model's endpoints from this replica (its batch lines not counted). */
export function interactiveInFlight(picker: EndpointPicker, entry: CatalogueEntry, lines: number): number {
  let total = 0;
  for (const e of entry.endpoints) total += picker.inFlight(e.url);
  return Math.max(0, total - lines);
}
