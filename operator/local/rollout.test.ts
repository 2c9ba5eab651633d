import { describe, expect, it } from 'vitest';
import { rolledOut, startRollout } from './rollout.ts';

const proc = (name: string, ready: boolean) => ({ name, ready });

describe('a local rollout', () => {
  it('keeps the ready processes of the earlier engine serving and lets the unready ones go at once', () => {
    const a = proc('a', true);
    const b = proc('b', false);
    const older = proc('older', true);
    expect(startRollout({ processes: [a, b], outgoing: [older] })).toEqual({
      outgoing: [older, a],
      useless: [b],
    });
  });

  it('hands over only when as many new processes as wanted are all ready', () => {
    const old = [proc('old', true)];
    expect(rolledOut([], old, 2)).toBeUndefined();
    expect(rolledOut([proc('n1', true)], old, 2)).toBeUndefined();
    expect(rolledOut([proc('n1', true), proc('n2', false)], old, 2)).toBeUndefined();
    expect(rolledOut([proc('n1', true), proc('n2', true)], old, 2)).toEqual(old);
  });

  it('has nothing to hand over without an earlier engine, and hands over at once when scaled to zero', () => {
    expect(rolledOut([proc('n1', true)], [], 1)).toBeUndefined();
    const old = [proc('old', true)];
    expect(rolledOut([], old, 0)).toEqual(old);
  });
});
