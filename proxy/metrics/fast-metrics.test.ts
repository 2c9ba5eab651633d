import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { FastCounter, FastGauge, FastHistogram } from './fast-metrics.ts';

const buckets = [0.001, 0.01, 0.1, 1];

/** The same updates applied to prom-client's metrics and to ours, each in its own registry. */
function both() {
  const theirs = new Registry();
  const ours = new Registry();
  const opts = (registers: Registry[]) => ({ help: 'h', registers });
  return {
    theirs,
    ours,
    counter: [
      new Counter({ name: 'c_total', labelNames: ['route', 'model'] as const, ...opts([theirs]) }),
      new FastCounter({ name: 'c_total', labelNames: ['route', 'model'] as const, ...opts([ours]) }),
    ] as const,
    gauge: [
      new Gauge({ name: 'g', labelNames: ['route'] as const, ...opts([theirs]) }),
      new FastGauge({ name: 'g', labelNames: ['route'] as const, ...opts([ours]) }),
    ] as const,
    histogram: [
      new Histogram({
        name: 'h_seconds',
        labelNames: ['route', 'model'] as const,
        buckets,
        ...opts([theirs]),
      }),
      new FastHistogram({
        name: 'h_seconds',
        labelNames: ['route', 'model'] as const,
        buckets,
        ...opts([ours]),
      }),
    ] as const,
  };
}

describe('fast metrics', () => {
  it('write the same /metrics text as prom-client for the same updates', async () => {
    const m = both();
    const [pc, fc] = m.counter;
    pc.labels('/v1/chat/completions', 'Org/Model').inc();
    fc.labels('/v1/chat/completions', 'Org/Model').inc();
    pc.labels('/v1/chat/completions', 'Org/Model').inc(41);
    fc.labels('/v1/chat/completions', 'Org/Model').inc(41);
    pc.inc({ route: '/v1/embeddings', model: 'quote"d\\' }, 2);
    fc.inc({ route: '/v1/embeddings', model: 'quote"d\\' }, 2);
    const [pg, fg] = m.gauge;
    for (const g of [pg, fg]) {
      g.labels('/v1/models').inc();
      g.labels('/v1/models').inc();
      g.labels('/v1/models').dec();
      g.labels('/v1/chat/completions').inc();
      g.labels('/v1/chat/completions').dec();
    }
    const [ph, fh] = m.histogram;
    // On a bound, between bounds, above all bounds, zero.
    for (const v of [0.001, 0.0042, 0.5, 3, 0]) {
      ph.labels('/v1/chat/completions', 'Org/Model').observe(v);
      fh.labels('/v1/chat/completions', 'Org/Model').observe(v);
    }
    ph.observe({ route: '/v1/embeddings', model: 'E' }, 0.02);
    fh.observe({ route: '/v1/embeddings', model: 'E' }, 0.02);
    const ours = await m.ours.metrics();
    expect(ours).toBe(await m.theirs.metrics());
    expect(ours).toContain('h_seconds_bucket{le="0.01",route="/v1/chat/completions",model="Org/Model"} 3');
    expect(ours).toContain('c_total{route="/v1/chat/completions",model="Org/Model"} 42');
    expect(ours).toContain('g{route="/v1/models"} 1');
  });

  it('hand out one series per label set, so a kept handle and a fresh lookup add to the same count', async () => {
    const m = both();
    const fc = m.counter[1];
    const kept = fc.labels('a', 'b');
    expect(fc.labels('a', 'b')).toBe(kept);
    kept.inc(2);
    fc.inc({ route: 'a', model: 'b' });
    expect(await m.ours.metrics()).toContain('c_total{route="a",model="b"} 3');
  });

  it('refuse a wrong number of labels and a non-finite observation', () => {
    const m = both();
    expect(() => m.counter[1].labels('only-one')).toThrow(/route, model/);
    expect(() => m.histogram[1].labels('a', 'b').observe(Number.NaN)).toThrow(/finite/);
  });

  it('empty after reset, like prom-client', async () => {
    const m = both();
    m.counter[0].labels('a', 'b').inc();
    m.counter[1].labels('a', 'b').inc();
    m.theirs.resetMetrics();
    m.ours.resetMetrics();
    expect(await m.ours.metrics()).toBe(await m.theirs.metrics());
  });
});
