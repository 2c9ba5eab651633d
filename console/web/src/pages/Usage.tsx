// Inference API Usage (issue "Console" item 3; SPEC "API key" rule 4): per key, per model and per
// day, with a chart, a date range and CSV export; View Usage on a key opens it filtered to that key.
// Figures come from the rollups the settlement scripts write, so there is no lag. Below them, the
// calls one by one and a lookup by request id, from the durable journal (./UsageCalls.tsx).
import { useEffect, useState } from 'react';
import { api, type KeyRow, type Me, type UsageGroup, type UsageRow, usageQueryString } from '../api.ts';
import { BarChart, everyDay } from '../Chart.tsx';
import { DateRange } from '../DateRange.tsx';
import { count, exactMoney, isoDay } from '../format.ts';
import { ErrorLine, ScrollTable } from '../parts.tsx';
import { navigate, useLocation } from '../router.tsx';
import { Tabs } from '../Tabs.tsx';
import { useTitle } from '../title.ts';
import { UsageCalls } from './UsageCalls.tsx';

const DAY = 86_400_000;
const GROUPS = ['By day', 'By key', 'By model'] as const;
const groupOf = { 'By day': 'day', 'By key': 'key', 'By model': 'model' } as const satisfies Record<
  (typeof GROUPS)[number],
  UsageGroup
>;
const METRICS = ['Cost', 'Requests', 'Input tokens', 'Output tokens'] as const;

export function Usage({ me }: { me: Me }) {
  useTitle('Inference API Usage');
  const { query } = useLocation();
  const keyId = query.get('keyId') ?? '';
  const today = isoDay(Date.now());
  const [from, setFrom] = useState(query.get('from') ?? isoDay(Date.now() - 29 * DAY));
  const [to, setTo] = useState(query.get('to') ?? today);
  const [group, setGroup] = useState<(typeof GROUPS)[number]>('By day');
  const [metric, setMetric] = useState<(typeof METRICS)[number]>('Cost');
  const [rows, setRows] = useState<UsageRow[] | null>(null);
  const [days, setDays] = useState<UsageRow[]>([]);
  const [keys, setKeys] = useState<KeyRow[]>([]);
  const [error, setError] = useState('');
  const currency = me.account.currency;

  const range = { from: Date.parse(`${from}T00:00:00Z`), to: Date.parse(`${to}T00:00:00Z`) + DAY - 1 };
  const valid = Number.isFinite(range.from) && Number.isFinite(range.to) && range.from <= range.to;
  const q = { ...range, group: groupOf[group], ...(keyId ? { keyId } : {}) };

  useEffect(() => {
    void api.keys().then(setKeys);
  }, []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: q is derived from these values
  useEffect(() => {
    if (!valid) {
      setError('The start date must be on or before the end date.');
      return;
    }
    setError('');
    void api.usage(q).then((r) => setRows(r.rows));
    void api.usage({ ...q, group: 'day' }).then((r) => setDays(r.rows));
  }, [from, to, group, keyId, valid]);

  const value = (r: UsageRow) =>
    metric === 'Cost'
      ? Number(r.cost)
      : metric === 'Requests'
        ? r.requests
        : metric === 'Input tokens'
          ? r.inputTokens
          : r.outputTokens;
  const keyName = keys.find((k) => k.id === keyId)?.name;

  return (
    <>
      <h1>Inference API Usage</h1>
      <p className="muted small">
        Every request is counted against the key that made it, the moment it is charged: these figures have no
        lag. Times are UTC.
      </p>
      <form className="row filters" onSubmit={(e) => e.preventDefault()}>
        <DateRange from={from} to={to} onFrom={setFrom} onTo={setTo} />
        <label className="inline">
          Key
          <select
            value={keyId}
            onChange={(e) =>
              navigate(e.target.value ? `/usage?keyId=${encodeURIComponent(e.target.value)}` : '/usage')
            }
          >
            <option value="">All keys</option>
            {keys.map((k) => (
              <option key={k.id} value={k.id}>
                {k.name}
              </option>
            ))}
            {keyId && !keyName && <option value={keyId}>{keyId} (deleted)</option>}
          </select>
        </label>
        <a className="button" href={valid ? `/api/usage.csv?${usageQueryString(q)}` : undefined} download>
          Export CSV
        </a>
      </form>
      {keyId && (
        <p data-testid="usage-filter">
          Showing the key <strong>{keyName ?? keyId}</strong>.{' '}
          <button type="button" className="link" onClick={() => navigate('/usage')}>
            Show all keys
          </button>
        </p>
      )}
      <ErrorLine error={error} />
      <div className="row">
        <Tabs
          label="Chart figure"
          items={METRICS}
          value={metric}
          onChange={setMetric}
          idPrefix="metric"
          controls="usage-chart"
        />
      </div>
      <div id="usage-chart">
        {days.length === 0 ? (
          <p className="empty-chart" data-testid="no-usage">
            {rows === null
              ? 'Loading…'
              : 'No usage yet in this range: calls made with the account’s keys appear here.'}
          </p>
        ) : (
          <BarChart
            title={`${metric} per day${currency && metric === 'Cost' ? ` (${currency})` : ''}`}
            points={everyDay(from, to, days, value)}
            format={(v) =>
              metric === 'Cost' ? exactMoney(String(Math.round(v * 1e9) / 1e9), currency) : count(v)
            }
          />
        )}
      </div>
      <Tabs
        label="Group the table"
        items={GROUPS}
        value={group}
        onChange={setGroup}
        idPrefix="group"
        controls="usage-table"
      />
      <ScrollTable
        head={[
          group === 'By day' ? 'Day' : group === 'By key' ? 'Key' : 'Model',
          'Requests',
          'Input tokens',
          'Cached tokens',
          'Output tokens',
          'Images',
          'Video seconds',
          `Cost${currency ? ` (${currency})` : ''}`,
        ]}
        id="usage-table"
        role="tabpanel"
        caption={`Usage ${group.toLowerCase()}`}
      >
        {(rows ?? []).map((r) => (
          <tr key={r.group}>
            <th scope="row">{r.label}</th>
            <td>{count(r.requests)}</td>
            <td>{count(r.inputTokens)}</td>
            <td>{count(r.cachedTokens)}</td>
            <td>{count(r.outputTokens)}</td>
            <td>{count(r.images)}</td>
            <td>{count(r.videoSeconds)}</td>
            <td>{exactMoney(r.cost, null)}</td>
          </tr>
        ))}
      </ScrollTable>
      {rows !== null && rows.length === 0 && <p>No usage in this range.</p>}
      <UsageCalls from={range.from} to={range.to} keyId={keyId} valid={valid} available={me.usageHistory} />
    </>
  );
}
