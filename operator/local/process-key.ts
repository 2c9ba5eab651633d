import type { Model } from '../model/model.ts';
import { canonical } from '../model/status.ts';

/** What the engine processes run: a change restarts them; replicas and scaling fields do not. */
export function processKey(model: Model): string {
  const engine = model.spec.engine;
  if (engine === undefined) return canonical(null);
  const { replicas, minReplicas, maxReplicas, autoscaling, queue, ...run } = engine;
  return canonical(run);
}
