// A local rollout, decided: what a Deployment with `maxUnavailable: 0` does with pods, done with
// engine processes. When a Model's engine changes, its processes that serve keep serving (and stay
// in the catalogue) while the new engine's start on other ports; once every new process is ready
// the old ones leave the catalogue and drain (retiring.ts). So calls made during a rollout always
// find an endpoint and a stream under way is never cut.
import type { EngineProcess } from './process.ts';

/** Processes enough alike for the decision (tests pass plain objects). */
type Proc = Pick<EngineProcess, 'ready'>;

/**
 * The engine changed: which of the earlier processes keep serving until the new ones are ready (an
 * earlier rollout's survivors and the ready current ones) and which can go at once (not ready:
 * they serve nobody).
 */
export function startRollout<P extends Proc>(previous: {
  processes: readonly P[];
  outgoing: readonly P[];
}): {
  outgoing: P[];
  useless: P[];
} {
  return {
    outgoing: [...previous.outgoing, ...previous.processes.filter((p) => p.ready)],
    useless: previous.processes.filter((p) => !p.ready),
  };
}

/** The outgoing processes to retire now (the new engine fully up), or undefined to keep them. */
export function rolledOut<P extends Proc>(
  current: readonly P[],
  outgoing: readonly P[],
  wanted: number,
): P[] | undefined {
  if (outgoing.length === 0) return undefined;
  const up = current.length >= wanted && current.every((p) => p.ready);
  return up ? [...outgoing] : undefined;
}
