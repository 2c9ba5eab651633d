import { describe, expect, it } from 'vitest';
import { Cancel } from './cancel.ts';

describe('Cancel', () => {
  it('fires each hook once with the first reason; hooks added later fire at once', () => {
    const c = new Cancel();
    const seen: unknown[] = [];
    const off = (r: unknown) => seen.push(`off:${r}`);
    c.onAbort((r) => seen.push(r));
    c.onAbort(off);
    c.off(off);
    c.abort('first');
    c.abort('second');
    c.onAbort((r) => seen.push(`late:${r}`));
    expect(seen).toEqual(['first', 'late:first']);
    expect(c.aborted).toBe(true);
    expect(c.reason).toBe('first');
  });

  it('a child aborts with its parent, but not the other way round', () => {
    const parent = new Cancel();
    const a = parent.child();
    const b = parent.child();
    a.abort('alone');
    expect(parent.aborted).toBe(false);
    parent.abort('all');
    expect(a.reason).toBe('alone');
    expect(b.reason).toBe('all');
  });
});
