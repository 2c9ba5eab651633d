// How many batch lines of a model may run now (docs/batches.md "Idle capacity"). Batch lines are
// the lowest priority. On an idle model they fill BATCH_CONCURRENCY slots; as interactive calls of
// the model arrive (anywhere in the fleet) the room shrinks in proportion, to none at
// BATCH_IDLE_BELOW interactive calls per endpoint: lines stop starting, and those running end on
// their own within a line's time. Only when a line holds a slot an interactive call needs — lines
// and interactive calls together above BATCH_CONCURRENCY, which is meant to be at most the fleet's
// engine slots — is the newest line preempted (its engine call cancelled; it wrote no result, so it
// runs again later, billed once). Preempting more eagerly cost the interactive calls more than it
// gave them in the benchmark: cancelling lines is work done the moment a call arrives.
export interface GateLimits {
  idleBelow: number;
  concurrency: number;
}

/** Pure: the lines that may run, given the interactive calls of the model now (fleet-wide). */
export function lineRoom(load: { interactive: number; endpoints: number }, limits: GateLimits): number {
  const busyAt = limits.idleBelow * Math.max(1, load.endpoints);
  if (load.interactive >= busyAt) return 0;
  return Math.floor((limits.concurrency * (busyAt - load.interactive)) / busyAt);
}

/** Pure: the lines that may keep running: those above it hold slots interactive calls need. */
export function slotRoom(load: { interactive: number }, limits: GateLimits): number {
  return Math.max(0, limits.concurrency - load.interactive);
}

/** Pure: may one more line start. */
export function mayAdmit(
  load: { interactive: number; lines: number; endpoints: number },
  limits: GateLimits,
): boolean {
  return load.lines < lineRoom(load, limits);
}
