import { describe, expect, it } from 'vitest';
import { deletionCosts, type ReplicaLoad, replicasToRemove } from './removal.ts';

const loads = (...l: (number | null)[]): ReplicaLoad[] => l.map((load, i) => ({ name: `r${i}`, load }));

describe('which replicas a scale-down removes', () => {
  it.each([
    ['the idlest of three', loads(5, 0, 3), 1, ['r1']],
    ['the two idlest, least loaded first', loads(5, 0, 3), 2, ['r1', 'r2']],
    ['on a tie, the newest (listed last)', loads(2, 2, 2), 1, ['r2']],
    ['one whose load is unknown before an idle one', loads(0, null, 4), 2, ['r1', 'r0']],
    ['nothing when not lowering', loads(1, 2), 0, []],
    ['all of them at most', loads(1, 2), 5, ['r0', 'r1']],
  ] as const)('%s', (_, replicas, count, expected) => {
    expect(replicasToRemove(replicas, count)).toEqual(expected);
  });

  it('costs each pod its calls in flight, so the Deployment deletes the idlest first; an unknown load gets none', () => {
    expect(deletionCosts(loads(7, 0, null, 2.4))).toEqual(
      new Map([
        ['r0', '7'],
        ['r1', '0'],
        ['r3', '2'],
      ]),
    );
    expect(deletionCosts(loads(1e12)).get('r0')).toBe(String(2 ** 31 - 1));
  });
});
