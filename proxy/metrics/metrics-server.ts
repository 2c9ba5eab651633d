// The proxy's /metrics on a port of its own (issue 24 item 6), as the operator serves its metrics:
// they name invite-only models and show revenue per model, so they are not on the API port the
// internet reaches. PROXY_METRICS_HOST/PORT; Prometheus (or the chart's ServiceMonitor) scrapes
// it inside the cluster, and a NetworkPolicy can keep everyone else off it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface MetricsServer {
  /** Starts listening (port 0: any free port); answers the port. */
  listen(host: string, port: number): Promise<number>;
  close(): Promise<void>;
}

export function metricsServer(registry: Pick<Registry, 'metrics' | 'contentType'>): MetricsServer {
  let server: Server | null = null;
  return {
    async listen(host, port) {
      const s = createServer((req, res) => {
        if (
          (req.url ?? '/').split('?')[0] !== '/metrics' ||
          (req.method !== 'GET' && req.method !== 'HEAD')
        ) {
          res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics');
          return;
        }
        registry
          .metrics()
          .then((body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body))
          .catch((err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err)));
      });
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(port, host, resolve);
      });
      server = s;
      return (s.address() as AddressInfo).port;
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (server === null) return resolve();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
