// Status conditions: what `kubectl get models` and `kubectl describe` show. Pure; the caller
// passes `now`, and a condition keeps its lastTransitionTime while its status does not change.
import type { Condition, ModelStatus } from './model.ts';

export type ConditionInput = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

export function withTransitions(
  next: ConditionInput[],
  previous: readonly Condition[] | undefined,
  now: string,
  generation: number | undefined,
): Condition[] {
  return next.map((c) => {
    const before = previous?.find((p) => p.type === c.type);
    const lastTransitionTime = before && before.status === c.status ? before.lastTransitionTime : now;
    return {
      ...c,
      lastTransitionTime,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    };
  });
}

/** Equal apart from timestamps: used to skip status writes that would change nothing. */
export function sameStatus(a: ModelStatus | undefined, b: ModelStatus | undefined): boolean {
  const strip = (s: ModelStatus | undefined) =>
    canonical({
      ...s,
      conditions: (s?.conditions ?? []).map(({ lastTransitionTime: _t, ...rest }) => rest),
    });
  return strip(a) === strip(b);
}

/** JSON with sorted keys: the API server does not keep our key order. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}

export const condition = (
  type: Condition['type'],
  status: boolean,
  reason: string,
  message: string,
): ConditionInput => ({ type, status: status ? 'True' : 'False', reason, message });
