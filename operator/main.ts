// Operator entry point: `tsx operator/main.ts --runtime kubernetes|local [--models-dir DIR] [--port N]`.
// Flags override the environment (OPERATOR_RUNTIME, MODELS_DIR, OPERATOR_PORT, REDIS_URL, KUBECONFIG,
// OPERATOR_NAMESPACE, OPERATOR_LEASE_NAMESPACE, OPERATOR_FLEET_CONFIG, POD_NAME, LOG_LEVEL). A bad value stops the process
// with a message naming it.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { FencedCatalogue } from '../core/catalogue/fence.ts';
import { CatalogueStore } from '../core/catalogue/store.ts';
import { type OperatorConfig, operatorSchema } from '../core/config/operator.ts';
import { DemandStore } from '../core/demand/demand.ts';
import { connectRedis } from '../core/redis/client.ts';
import { requireNoEviction } from '../core/redis/policy.ts';
import { loadFleetConfig } from './fleet/profiles.ts';
import { KubeClient } from './kube/client.ts';
import { KubernetesRuntime } from './kube/runtime.ts';
import { LocalRuntime } from './local/runtime.ts';
import { OperatorMetrics, startMetricsServer } from './metrics.ts';
import { CatalogueWriter } from './runtime/catalogue-writer.ts';
import type { Runtime } from './runtime/runtime.ts';

export type { OperatorConfig };

export function operatorConfig(argv: string[], env: NodeJS.ProcessEnv): OperatorConfig {
  const { values } = parseArgs({
    args: argv,
    options: { runtime: { type: 'string' }, 'models-dir': { type: 'string' }, port: { type: 'string' } },
    strict: true,
  });
  const merged = {
    ...env,
    ...(values.runtime ? { OPERATOR_RUNTIME: values.runtime } : {}),
    ...(values['models-dir'] ? { MODELS_DIR: values['models-dir'] } : {}),
    ...(values.port ? { OPERATOR_PORT: values.port } : {}),
  };
  const parsed = operatorSchema.safeParse(merged);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n');
    throw new Error(`invalid operator configuration:\n${problems}`);
  }
  return parsed.data;
}

/** KUBECONFIG (or ~/.kube/config) outside a cluster; the service account inside one. */
function kubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

export async function main(argv = process.argv.slice(2), env = process.env): Promise<() => Promise<void>> {
  const config = operatorConfig(argv, env);
  const log = pino({ level: config.LOG_LEVEL, base: { component: 'operator' } });
  const redis = connectRedis(config.REDIS_URL, { maxRetriesPerRequest: 3 });
  redis.on('error', (err) => log.warn({ err: err.message }, 'redis'));
  await requireNoEviction(redis, 'the operator');
  // Several Kubernetes replicas share the catalogue, so their writes are fenced by leadership term.
  const fence = config.OPERATOR_RUNTIME === 'kubernetes' ? new FencedCatalogue(redis) : undefined;
  const catalogue = new CatalogueWriter(new CatalogueStore(redis), fence);
  const deps = {
    catalogue,
    log,
    demand: new DemandStore(redis),
    scaleIntervalMs: config.OPERATOR_SCALE_INTERVAL_MS,
  };
  const runtime: Runtime =
    config.OPERATOR_RUNTIME === 'local'
      ? new LocalRuntime(deps, { dir: resolve(config.MODELS_DIR), cwd: process.cwd() })
      : new KubernetesRuntime(new KubeClient(kubeConfig()), deps, {
          ...(config.OPERATOR_NAMESPACE ? { namespace: config.OPERATOR_NAMESPACE } : {}),
          leaseNamespace: config.OPERATOR_LEASE_NAMESPACE,
          ...(config.POD_NAME ? { identity: config.POD_NAME } : {}),
          ...(config.OPERATOR_FLEET_CONFIG ? { fleet: loadFleetConfig(config.OPERATOR_FLEET_CONFIG) } : {}),
        });
  const metrics = new OperatorMetrics(runtime);
  Object.assign(deps, { metrics });
  const server = await startMetricsServer(metrics, runtime, config.OPERATOR_PORT, config.OPERATOR_HOST);
  await runtime.start();
  log.info({ runtime: runtime.kind, port: server.port }, 'operator running');
  return async () => {
    await runtime.stop();
    await server.close();
    await redis.quit().catch(() => redis.disconnect());
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then(
    (stop) => {
      let stopping = false;
      const shutdown = () => {
        if (stopping) return;
        stopping = true;
        stop().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.on('SIGINT', shutdown);
      process.on('SIGTERM', shutdown);
    },
    (err: unknown) => {
      process.stderr.write(`operator: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
