import { describe, expect, it } from 'vitest';
import type { UsageRow } from '../core/usage/usage.ts';
import { groupUsage, usageCsv } from './usage-table.ts';

const H = 3_600_000;
const day1 = Date.UTC(2026, 10, 1);
const row = (o: Partial<UsageRow>): UsageRow => ({
  hour: new Date(o.hourStartMs ?? day1).toISOString(),
  hourStartMs: day1,
  keyId: 'key_a',
  model: 'Org/Chat',
  requests: 1,
  inputTokens: 10,
  cachedTokens: 0,
  outputTokens: 5,
  images: 0,
  videoSeconds: 0,
  cost: 1_000_000,
  refunded: 0,
  ...o,
});

const rows = [
  row({}),
  row({ hourStartMs: day1 + 5 * H, inputTokens: 20, cost: 2_500_000 }),
  row({ hourStartMs: day1 + 30 * H, keyId: 'key_b', model: 'Org/Image', images: 4, cost: 40_000_000 }),
  row({ hourStartMs: day1 + 31 * H, keyId: null, model: 'Org/Video', videoSeconds: 4.5, cost: 9_000_000 }),
];
const names = new Map([
  ['key_a', 'editor'],
  ['key_b', 'ci (deleted)'],
]);

describe('groupUsage', () => {
  it.each([
    [
      'day',
      [
        ['2026-11-01', 2, 30, '0.0035'],
        ['2026-11-02', 2, 20, '0.049'],
      ],
    ],
    [
      'key',
      [
        ['ci (deleted)', 1, 10, '0.04'],
        ['(no key)', 1, 10, '0.009'],
        ['editor', 2, 30, '0.0035'],
      ],
    ],
    [
      'model',
      [
        ['Org/Image', 1, 10, '0.04'],
        ['Org/Video', 1, 10, '0.009'],
        ['Org/Chat', 2, 30, '0.0035'],
      ],
    ],
  ] as const)(
    'by %s: sums requests, tokens and cost exactly; days in order, the rest by cost',
    (by, want) => {
      const got = groupUsage(rows, by, names).map((r) => [r.label, r.requests, r.inputTokens, r.cost]);
      expect(got).toEqual(want);
    },
  );

  it('keeps images and video seconds per group', () => {
    const byModel = groupUsage(rows, 'model', names);
    expect(byModel.find((r) => r.group === 'Org/Image')?.images).toBe(4);
    expect(byModel.find((r) => r.group === 'Org/Video')?.videoSeconds).toBe(4.5);
  });
});

describe('usageCsv', () => {
  it('one header and one line per row, the currency named, CRLF line ends', () => {
    const csv = usageCsv(groupUsage(rows, 'day', names), 'USD', 'day');
    expect(csv.split('\r\n')).toEqual([
      'day,label,requests,input tokens,cached tokens,output tokens,images,video seconds,cost (USD)',
      '2026-11-01,2026-11-01,2,30,0,10,0,0,0.0035',
      '2026-11-02,2026-11-02,2,20,0,10,4,4.5,0.049',
      '',
    ]);
  });

  it('quotes commas and quotes, and defuses spreadsheet formulas in names', () => {
    const csv = usageCsv(
      groupUsage(
        [row({ keyId: 'k1' }), row({ keyId: 'k2' })],
        'key',
        new Map([
          ['k1', 'a, "b"'],
          ['k2', '=HYPERLINK("x")'],
        ]),
      ),
      null,
      'key',
    );
    expect(csv).toContain('k1,"a, ""b""",');
    expect(csv).toContain(`k2,"'=HYPERLINK(""x"")",`);
    expect(csv.split('\r\n')[0]).toMatch(/,cost$/);
  });
});
