// How many batch lines of a model may run now (docs/batches.md "Idle capacity"). Batch lines are
// the lowest priority: on an idle model they fill BATCH_CONCURRENCY slots; each interactive call of
// the model, anywhere in the fleet, takes one of those slots back (the runner preempts a line above
// the room at once, so the call does not wait behind it in the engine); and at BATCH_IDLE_BELOW
// interactive calls per endpoint the model counts as busy and no line runs. BATCH_CONCURRENCY is
// meant to be at most the fleet's engine slots, so lines plus interactive calls never queue in an
// engine. A line preempted has written no result: it runs again later, billed once.
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

/** Pure: may one more line start. */
export function mayAdmit(
  load: { interactive: number; lines: number; endpoints: number },
  limits: GateLimits,
): boolean {
  return load.lines < lineRoom(load, limits);
}
