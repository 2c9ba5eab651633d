// The alerts shipped in deploy/prometheus-rules.yaml watch metrics the proxy really exports: a
// renamed metric would otherwise leave an alert that can never fire.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createProxyMetrics } from './metrics.ts';

describe('money alerts', () => {
  it('every metric an alert expression names is one the proxy exports', async () => {
    const rules = parse(
      readFileSync(new URL('../../deploy/prometheus-rules.yaml', import.meta.url), 'utf8'),
    ) as {
      spec: { groups: { rules: { alert: string; expr: string }[] }[] };
    };
    const exported = new Set((await createProxyMetrics().registry.getMetricsAsJSON()).map((m) => m.name));
    const named = rules.spec.groups.flatMap((g) =>
      g.rules.flatMap((r) => r.expr.match(/\bmp_[a-z_]+\b/g) ?? []),
    );
    expect(named.length).toBeGreaterThanOrEqual(4);
    for (const name of named) expect(exported, `${name} is not exported`).toContain(name);
  });
});
