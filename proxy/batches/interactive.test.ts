import { describe, expect, it } from 'vitest';
import { InteractiveLoad } from './interactive.ts';

describe('the interactive load the batch runner backs off for', () => {
  it('counts each call once per model, tells arrivals and departures, and leaving twice counts once', () => {
    const load = new InteractiveLoad();
    const told: string[] = [];
    const unlisten = load.listen((model, arrived) => told.push(`${model}:${arrived ? 'in' : 'out'}`));
    const a = load.enter('M');
    load.enter('M');
    load.enter('N');
    expect(load.count('M')).toBe(2);
    a();
    a();
    expect(load.count('M')).toBe(1);
    expect(told).toEqual(['M:in', 'M:in', 'N:in', 'M:out']);
    unlisten();
    load.enter('M');
    expect(told).toHaveLength(4);
    expect(load.count('X')).toBe(0);
  });
});
