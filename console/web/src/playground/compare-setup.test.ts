import { describe, expect, it } from 'vitest';
import { nextModel, setupFrom, setupQuery } from './compare-setup.ts';
import { DEFAULT_PARAMS } from './params.ts';

const usable = ['A', 'B', 'C'];

describe('a compare set-up from its link', () => {
  it('only the account’s usable models make columns; the rest are named as left out', () => {
    const s = setupFrom(new URLSearchParams('model=A&model=Secret&model=C'), usable);
    expect(s.columns.map((c) => c.model)).toEqual(['A', 'C']);
    expect(s.dropped).toEqual(['Secret']);
  });
  it('too few usable columns are made up with models not already shown', () => {
    const s = setupFrom(new URLSearchParams('model=B&model=Secret'), usable);
    expect(s.columns.map((c) => c.model)).toEqual(['B', 'A']);
  });
  it('each column keeps its own dialect and parameters through the link', () => {
    const s = setupFrom(new URLSearchParams('model=A&model=B'), usable);
    s.columns[1] = { ...s.columns[1]!, dialect: 'messages', params: { ...DEFAULT_PARAMS, maxTokens: 99 } };
    s.prompts = ['hi'];
    const back = setupFrom(new URLSearchParams(setupQuery(s)), usable);
    expect(back.columns).toEqual(s.columns);
    expect(back.prompts).toEqual(['hi']);
  });
  it('several prompts keep their order through the link (at most five); a link without one has one empty prompt', () => {
    const s = setupFrom(new URLSearchParams('model=A&model=B'), usable);
    expect(s.prompts).toEqual(['']);
    s.prompts = ['one', 'two & three', 'four'];
    expect(setupFrom(new URLSearchParams(setupQuery(s)), usable).prompts).toEqual(s.prompts);
    const many = new URLSearchParams('model=A');
    for (let i = 0; i < 7; i++) many.append('prompt', `p${i}`);
    expect(setupFrom(many, usable).prompts).toEqual(['p0', 'p1', 'p2', 'p3', 'p4']);
  });
  it('"Add a column" takes a model not already shown', () => {
    expect(nextModel(['A', 'B'], usable)).toBe('C');
    expect(nextModel(['A', 'B', 'C'], usable)).toBe('A');
  });
});
