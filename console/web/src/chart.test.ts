import { describe, expect, it } from 'vitest';
import { everyDay } from './Chart.tsx';

describe('a chart of every day of the range (issue 37 item 7)', () => {
  const rows = [{ group: '2026-11-03', n: 5 }];
  it('gives each day its slot, zero where there is no row', () => {
    const points = everyDay('2026-11-01', '2026-11-30', rows, (r) => r.n);
    expect(points).toHaveLength(30);
    expect(points[0]).toEqual({ label: '2026-11-01', value: 0 });
    expect(points[2]).toEqual({ label: '2026-11-03', value: 5 });
    expect(points.filter((p) => p.value > 0)).toHaveLength(1);
  });
  it('crosses a month end and a leap day; a one-day range is one point', () => {
    expect(everyDay('2028-02-28', '2028-03-01', [], () => 1).map((p) => p.label)).toEqual([
      '2028-02-28',
      '2028-02-29',
      '2028-03-01',
    ]);
    expect(everyDay('2026-11-03', '2026-11-03', rows, (r) => r.n)).toEqual([
      { label: '2026-11-03', value: 5 },
    ]);
  });
  it('an inverted or unreadable range has no points; a long one stops at 366', () => {
    expect(everyDay('2026-11-30', '2026-11-01', rows, (r) => r.n)).toEqual([]);
    expect(everyDay('nope', '2026-11-01', rows, (r) => r.n)).toEqual([]);
    expect(everyDay('2020-01-01', '2026-01-01', [], () => 0)).toHaveLength(366);
  });
});
