// Operator metrics and the small HTTP server that serves them with /healthz. Each operator gets
// its own registry, so two replicas in one test process do not collide.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Condition } from './model/model.ts';

export interface ModelConditionSource {
  /** Current conditions of every Model this operator sees. */
  conditions(): Iterable<readonly Condition[] | undefined>;
}

export class OperatorMetrics {
  readonly registry = new Registry();
  readonly reconciles = new Counter({
    name: 'modelplane_operator_reconciles_total',
    help: 'Reconciles by result (success, error).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly reconcileErrors = new Counter({
    name: 'modelplane_operator_reconcile_errors_total',
    help: 'Reconciles that failed and were queued for a retry with backoff.',
    registers: [this.registry],
  });
  readonly reconcileSeconds = new Histogram({
    name: 'modelplane_operator_reconcile_duration_seconds',
    help: 'Time to plan and apply one Model.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly catalogueWrites = new Counter({
    name: 'modelplane_operator_catalogue_writes_total',
    help: 'Catalogue entries written or removed (no-op writes are skipped).',
    registers: [this.registry],
  });
  readonly leader = new Gauge({
    name: 'modelplane_operator_leader',
    help: '1 while this replica holds the leader Lease (the local runtime is always 1).',
    registers: [this.registry],
  });

  constructor(source: ModelConditionSource) {
    new Gauge({
      name: 'modelplane_operator_models',
      help: 'Models by condition type and status.',
      labelNames: ['condition', 'status'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const conditions of source.conditions()) {
          for (const c of conditions ?? []) this.inc({ condition: c.type, status: c.status });
        }
      },
    });
  }
}

export interface HealthSource {
  healthy(): { ok: boolean; detail: Record<string, unknown> };
}

export async function startMetricsServer(
  metrics: OperatorMetrics,
  health: HealthSource,
  port: number,
  host = '0.0.0.0',
): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/metrics') {
      metrics.registry
        .metrics()
        .then((body) => {
          res.writeHead(200, { 'content-type': metrics.registry.contentType });
          res.end(body);
        })
        .catch((err: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(String(err));
        });
      return;
    }
    if (path === '/healthz') {
      const { ok, detail } = health.healthy();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok, ...detail }));
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
