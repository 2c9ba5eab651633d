// The operator with only the permissions operator/deploy/rbac.yaml grants (a real service-account
// token, RBAC enforced by the API server) still does its whole job.
import { readFileSync } from 'node:fs';
import { KubeConfig, type KubernetesObject, KubernetesObjectApi } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { FencedCatalogue } from '../../core/catalogue/fence.ts';
import { CatalogueStore } from '../../core/catalogue/store.ts';
import { DemandStore } from '../../core/demand/demand.ts';
import { chatModel } from '../../operator/fixtures.ts';
import { KubeClient } from '../../operator/kube/client.ts';
import { KubernetesRuntime } from '../../operator/kube/runtime.ts';
import { CatalogueWriter } from '../../operator/runtime/catalogue-writer.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { startCluster, type TestCluster } from './cluster.ts';
import {
  apis,
  createModel,
  modelRef,
  readModel,
  readySlice,
  TEST_LEASE,
  TEST_REQUEST_TIMEOUT_MS,
  waitUntil,
} from './helpers.ts';

let cluster: TestCluster;
let redis: TestRedis;
let runtime: KubernetesRuntime | undefined;

beforeAll(async () => {
  [cluster, redis] = await Promise.all([startCluster(), startRedis()]);
}, 900_000);
afterAll(async () => {
  await runtime?.stop();
  await Promise.all([cluster?.stop(), redis?.stop()]);
});

async function serviceAccountKubeConfig(): Promise<KubeConfig> {
  const objects = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
  await apis(cluster).core.createNamespace({ body: { metadata: { name: 'modelplane' } } });
  const rbac = readFileSync(new URL('../../operator/deploy/rbac.yaml', import.meta.url), 'utf8');
  for (const doc of parseAllDocuments(rbac)) await objects.create(doc.toJS() as KubernetesObject);
  const { status } = await apis(cluster).core.createNamespacedServiceAccountToken({
    name: 'modelplane-operator',
    namespace: 'modelplane',
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const admin = cluster.kubeConfig.getCurrentCluster()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'test', server: admin.server, caData: admin.caData, skipTLSVerify: false }],
    users: [{ name: 'operator', token: status?.token }],
    contexts: [{ name: 'test', cluster: 'test', user: 'operator' }],
    currentContext: 'test',
  });
  return kc;
}

describe('operator RBAC (operator/deploy/rbac.yaml)', () => {
  it('reconciles, catalogues and cleans up with only the granted permissions', async () => {
    const kc = await serviceAccountKubeConfig();
    const store = new CatalogueStore(redis.client());
    const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
    runtime = new KubernetesRuntime(
      new KubeClient(kc, { requestTimeoutMs: TEST_REQUEST_TIMEOUT_MS }),
      {
        catalogue: new CatalogueWriter(store, new FencedCatalogue(redis.client())),
        log,
        demand: new DemandStore(redis.client()),
        scaleIntervalMs: 200,
      },
      { leaseNamespace: 'modelplane', identity: 'sa-op', ...TEST_LEASE },
    );
    await runtime.start();
    await waitUntil('leader', async () => runtime!.leader.isLeader);
    expect(runtime.healthy().ok).toBe(true);

    await createModel(cluster, chatModel('llama'));
    await waitUntil('Deployment', () =>
      apis(cluster).apps.readNamespacedDeployment({ name: 'model-llama', namespace: 'default' }),
    );
    await apis(cluster).discovery.createNamespacedEndpointSlice({
      namespace: 'default',
      body: readySlice('model-llama', 9000),
    });
    await waitUntil('entry', () => store.get('meta-llama/llama-3.1-8b-instruct'));
    await waitUntil('status', async () => (await readModel(cluster, 'llama')).status?.conditions);
    // The scaler writes replicas through the scale subresource with the same account.
    await createModel(
      cluster,
      chatModel('auto', {
        id: 'Acme/Auto',
        engine: { type: 'simulator', minReplicas: 0, maxReplicas: 2, autoscaling: {} },
      }),
    );
    await new DemandStore(redis.client()).publish(
      'p',
      new Map([['Acme/Auto', { inFlight: 0, queued: 0, held: 1 }]]),
      60_000,
    );
    await waitUntil(
      'scaled to 1',
      async () => (await readModel(cluster, 'auto')).spec.engine?.replicas === 1,
    );
    await apis(cluster).custom.deleteNamespacedCustomObject(modelRef('auto'));
    await apis(cluster).custom.deleteNamespacedCustomObject(modelRef('llama'));
    await waitUntil(
      'entry removed',
      async () => (await store.get('meta-llama/llama-3.1-8b-instruct')) === null,
    );
  }, 60_000);
});
