// Counters, gauges and histograms for the per-request path, exposed through prom-client's
// registry. A prom-client update validates and hashes the label set every time, even through a
// labels() child: about 1.5 µs per update on the benchmark machine, and a request makes nine or
// ten of them (in flight up and down, the request count, two latency histograms, four token and
// credit counters) — 3–4 % of the proxy's CPU. Here a label set is resolved once into a series
// holding plain numbers, and an update is an addition. The registry reads them through the
// Metric interface it uses for its own metrics (`get()`), so /metrics is the same text prom-client
// would write for the same updates (tested against prom-client itself).
import type { Registry } from 'prom-client';

type MetricType = 'counter' | 'gauge' | 'histogram';

/** One sample as prom-client's registry formats it. */
interface Sample {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
  sharedLabels?: Labels;
}

/** What the registry reads from a metric at scrape time. */
interface Snapshot {
  name: string;
  help: string;
  type: MetricType;
  aggregator: 'sum';
  values: Sample[];
}

type Labels = Record<string, string>;

interface MetricOptions<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  registers: Registry[];
}

/** What every metric here shares: a series per label set, resolved once and kept. */
abstract class FastMetric<L extends string, S extends { labels: Labels }> {
  readonly name: string;
  readonly help: string;
  abstract readonly type: MetricType;
  readonly aggregator = 'sum' as const;
  protected readonly labelNames: readonly L[];
  /** Every series, in creation order (what a scrape reads). */
  protected readonly series: S[] = [];
  /** Label value → (next label's map … →) series: no key string is built per update. */
  private readonly index = new Map<string, unknown>();

  constructor(o: MetricOptions<L>) {
    this.name = o.name;
    this.help = o.help;
    this.labelNames = o.labelNames;
    for (const r of o.registers) r.registerMetric(this as never);
  }

  protected abstract create(labels: Labels): S;

  /** The series for these label values, in labelNames order (made on first use). */
  protected seriesOf(values: readonly string[]): S {
    const last = values.length - 1;
    if (last + 1 !== this.labelNames.length)
      throw new Error(`${this.name} takes labels ${this.labelNames.join(', ')}`);
    let node = this.index;
    for (let i = 0; i < last; i++) {
      let next = node.get(values[i]!) as Map<string, unknown> | undefined;
      if (next === undefined) {
        next = new Map();
        node.set(values[i]!, next);
      }
      node = next;
    }
    let s = node.get(values[last]!) as S | undefined;
    if (s === undefined) {
      const labels: Labels = {};
      this.labelNames.forEach((n, i) => {
        labels[n] = values[i]!;
      });
      s = this.create(labels);
      node.set(values[last]!, s);
      this.series.push(s);
    }
    return s;
  }

  protected valuesOf(labels: Partial<Record<L, string>>): string[] {
    return this.labelNames.map((n) => labels[n] ?? '');
  }

  reset(): void {
    this.series.length = 0;
    this.index.clear();
  }

  abstract get(): Promise<Snapshot>;
}

/** One label set of a counter or gauge: what labels() hands out, kept by callers on hot paths. */
export class CountSeries {
  value = 0;
  constructor(readonly labels: Labels) {}

  inc(n = 1): void {
    this.value += n;
  }

  dec(n = 1): void {
    this.value -= n;
  }
}

export class FastCounter<L extends string> extends FastMetric<L, CountSeries> {
  readonly type: MetricType = 'counter';

  protected create(labels: Labels): CountSeries {
    return new CountSeries(labels);
  }

  /** The series for these label values, in labelNames order (a counter only goes up). */
  labels(...values: string[]): Pick<CountSeries, 'inc'> {
    return this.seriesOf(values);
  }

  inc(labels: Partial<Record<L, string>>, n = 1): void {
    this.seriesOf(this.valuesOf(labels)).inc(n);
  }

  async get(): Promise<Snapshot> {
    const values = this.series.map((s) => ({ value: s.value, labels: s.labels }));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/** A counter that also goes down (in-flight requests). */
export class FastGauge<L extends string> extends FastCounter<L> {
  override readonly type: MetricType = 'gauge';

  override labels(...values: string[]): CountSeries {
    return this.seriesOf(values);
  }
}

/** One label set of a histogram. */
export class HistogramSeries {
  /** Observations per bucket (not cumulative); the last slot is above every bound. */
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Labels,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(v: number): void {
    if (!Number.isFinite(v)) throw new TypeError(`not a finite number: ${v}`);
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }
}

export class FastHistogram<L extends string> extends FastMetric<L, HistogramSeries> {
  readonly type: MetricType = 'histogram';
  private readonly bounds: readonly number[];

  constructor(o: MetricOptions<L> & { buckets: readonly number[] }) {
    super(o);
    this.bounds = [...o.buckets].sort((a, b) => a - b);
  }

  protected create(labels: Labels): HistogramSeries {
    return new HistogramSeries(labels, this.bounds);
  }

  labels(...values: string[]): HistogramSeries {
    return this.seriesOf(values);
  }

  observe(labels: Partial<Record<L, string>>, v: number): void {
    this.seriesOf(this.valuesOf(labels)).observe(v);
  }

  async get(): Promise<Snapshot> {
    const bucket = `${this.name}_bucket`;
    const values: Sample[] = [];
    for (const s of this.series) {
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += s.counts[i]!;
        values.push(sample(bucket, { le }, acc, s.labels));
      });
      values.push(sample(bucket, { le: '+Inf' }, s.count, s.labels));
      values.push(sample(`${this.name}_sum`, {}, s.sum, s.labels));
      values.push(sample(`${this.name}_count`, {}, s.count, s.labels));
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/** A sample as prom-client's histograms give them: own labels (le) apart from the series' labels. */
function sample(
  metricName: string,
  labels: Record<string, string | number>,
  value: number,
  sharedLabels: Labels,
): Sample {
  return { metricName, labels, value, sharedLabels };
}
