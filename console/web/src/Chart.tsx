// A bar chart of one figure per day, in SVG: no chart library for one chart. The numbers are in the
// table beside it too, and the chart carries a text summary, so it is never the only way to read them.
// Every day of the range has its slot (everyDay), so one day of data in a 30-day range is one slim
// bar at its date, not one bar across the whole chart (issue 37 item 7).

const DAY = 86_400_000;

/**
 * One point per UTC day from `from` to `to` (YYYY-MM-DD, both included, at most 366), the value of
 * the day's row or 0: days without calls have no row.
 */
export function everyDay<T extends { group: string }>(
  from: string,
  to: string,
  rows: T[],
  value: (row: T) => number,
): { label: string; value: number }[] {
  const start = Date.parse(`${from}T00:00:00Z`);
  const end = Date.parse(`${to}T00:00:00Z`);
  if (!Number.isFinite(start) || !Number.isFinite(end) || end < start) return [];
  const byDay = new Map(rows.map((r) => [r.group, r]));
  const points: { label: string; value: number }[] = [];
  for (let t = start; t <= end && points.length < 366; t += DAY) {
    const label = new Date(t).toISOString().slice(0, 10);
    const row = byDay.get(label);
    points.push({ label, value: row ? value(row) : 0 });
  }
  return points;
}

export function BarChart(props: {
  title: string;
  points: { label: string; value: number }[];
  format: (v: number) => string;
}) {
  const { points } = props;
  const width = 640;
  const height = 180;
  const pad = { top: 10, bottom: 24, left: 8, right: 8 };
  const max = Math.max(0, ...points.map((p) => p.value));
  const band = points.length === 0 ? 0 : (width - pad.left - pad.right) / points.length;
  const bar = Math.max(1, band * 0.7);
  const y = (v: number) => (max === 0 ? 0 : ((height - pad.top - pad.bottom) * v) / max);
  const total = points.reduce((s, p) => s + p.value, 0);
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-labelledby="chart-title chart-desc">
        <title id="chart-title">{props.title}</title>
        <desc id="chart-desc">
          {points.length === 0
            ? 'No usage in this range.'
            : `${points.length} days, ${points.filter((p) => p.value > 0).length} with usage, ${props.format(total)} in all, at most ${props.format(max)} in a day.`}
        </desc>
        <line
          x1={pad.left}
          x2={width - pad.right}
          y1={height - pad.bottom}
          y2={height - pad.bottom}
          stroke="#8c959f"
        />
        {points.map((p, i) => {
          const h = y(p.value);
          const x = pad.left + i * band + (band - bar) / 2;
          return (
            <g key={p.label}>
              <rect
                x={x}
                y={height - pad.bottom - h}
                width={bar}
                height={h}
                fill="#0969da"
                data-day={p.label}
              >
                <title>
                  {p.label}: {props.format(p.value)}
                </title>
              </rect>
              {(points.length <= 10 || i % Math.ceil(points.length / 8) === 0) && (
                <text x={x + bar / 2} y={height - 8} textAnchor="middle" fontSize="10" fill="#57606a">
                  {p.label.slice(5)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption className="muted small">{props.title}</figcaption>
    </figure>
  );
}
