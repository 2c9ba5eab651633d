// Inference API Usage's table (issue "Console" item 3): the hourly rollup rows grouped by key,
// model or day, and the same table as CSV. Pure: the route reads the rollups and the key names.
import { formatNano } from '../core/money.ts';
import { USAGE_COUNTS, type UsageCounts, type UsageRow, zeroCounts } from '../core/usage/usage.ts';

export type UsageGroup = 'key' | 'model' | 'day';

export interface UsageTableRow extends UsageCounts {
  /** The key id, the model id, or the day (YYYY-MM-DD, UTC). */
  group: string;
  /** The key's name ("(deleted)" appended for a deleted key), else the group. */
  label: string;
  /** Charged minus refunded, in the account currency (a decimal string). */
  cost: string;
}

export function groupUsage(
  rows: readonly UsageRow[],
  by: UsageGroup,
  keyNames: ReadonlyMap<string, string>,
): UsageTableRow[] {
  const groups = new Map<string, UsageTableRow & { nano: number }>();
  for (const r of rows) {
    const group =
      by === 'key'
        ? (r.keyId ?? '')
        : by === 'model'
          ? r.model
          : new Date(r.hourStartMs).toISOString().slice(0, 10);
    let g = groups.get(group);
    if (!g) {
      const label = by === 'key' ? (keyNames.get(group) ?? (group === '' ? '(no key)' : group)) : group;
      g = {
        group,
        label,
        ...zeroCounts(),
        cost: '0',
        nano: 0,
      };
      groups.set(group, g);
    }
    for (const k of USAGE_COUNTS) g[k] += r[k];
    g.nano += r.cost;
  }
  const out = [...groups.values()].map(({ nano, ...g }) => ({ ...g, cost: formatNano(nano) }));
  // Days in order; keys and models by what they cost, most first.
  return by === 'day'
    ? out.sort((a, b) => a.group.localeCompare(b.group))
    : out.sort((a, b) => Number(b.cost) - Number(a.cost) || a.label.localeCompare(b.label));
}

const HEADERS = ['requests', 'input tokens', 'cached tokens', 'output tokens', 'images', 'video seconds'];

/** RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled. */
const field = (v: string | number) => {
  const s = String(v);
  // A leading =, +, - or @ would be a formula to a spreadsheet: key names are user input.
  const safe = /^[=+\-@\t\r]/.test(s) && typeof v === 'string' ? `'${s}` : s;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
};

export function usageCsv(rows: readonly UsageTableRow[], currency: string | null, by: UsageGroup): string {
  const head = [by, 'label', ...HEADERS, `cost${currency ? ` (${currency})` : ''}`];
  const lines = [
    head,
    ...rows.map((r) => [
      r.group,
      r.label,
      r.requests,
      r.inputTokens,
      r.cachedTokens,
      r.outputTokens,
      r.images,
      r.videoSeconds,
      r.cost,
    ]),
  ];
  return `${lines.map((l) => l.map(field).join(',')).join('\r\n')}\r\n`;
}
