// make e2e-cluster: the chart on a control plane whose controllers are real (kube-apiserver,
// kube-controller-manager, kube-scheduler; kwok for the nodes and kubelets). `helm install` with
// the defaults and with every option on (but prometheus-operator's kinds): every Deployment, StatefulSet and PodDisruptionBudget
// reaches its desired state through the real controllers and scheduler. The operator, run from the
// source tree with the chart's own ServiceAccount (its RBAC, as in production), turns a Model into
// a Deployment whose pods kwok marks ready; the endpointslice controller publishes them and the
// catalogue lists the model with those endpoints. `helm upgrade` keeps the key-encryption key;
// deleting the Model and `helm uninstall` leave nothing behind but what is kept on purpose (the
// key, and the Redis and journal volumes' claims).
import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CatalogueStore } from '../../core/catalogue/store.ts';
import { freePort } from '../../core/free-port.ts';
import { allOnValues, chartDir, helm, helmBinary } from '../chart/helm.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { waitUntil } from '../k8s/helpers.ts';
import { writeKubeconfig } from '../k8s/kubeconfig-file.ts';
import { type ControlPlane, startControlPlane } from './control-plane.ts';

const repo = new URL('../../', import.meta.url).pathname;
const started = Date.now();
let cp: ControlPlane;
let redis: TestRedis;
let operator: ChildProcess | undefined;

const json = async <T>(r: Response): Promise<T> => {
  if (!r.ok) throw new Error(`${r.status} ${await r.text()}`);
  return (await r.json()) as T;
};
const get = <T>(path: string) => cp.api('GET', path).then((r) => json<T>(r));

beforeAll(async () => {
  helmBinary();
  [cp, redis] = await Promise.all([startControlPlane(2), startRedis()]);
  for (const name of ['modelplane', 'modelplane-full', 'models'])
    await json(await cp.api('POST', '/api/v1/namespaces', { metadata: { name } }));
  // Volumes for the claims: the bundled Redis's, and the proxies' journals (every option on).
  for (let i = 0; i < 8; i++) {
    await json(
      await cp.api('POST', '/api/v1/persistentvolumes', {
        metadata: { name: `pv-${i}` },
        spec: {
          capacity: { storage: '10Gi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: i < 2 ? '' : 'fast',
          hostPath: { path: `/tmp/pv-${i}` },
        },
      }),
    );
  }
}, 1_800_000);

afterAll(async () => {
  operator?.kill('SIGKILL');
  await Promise.all([cp?.stopAll(), redis?.stop()]);
  process.stderr.write(`[e2e-cluster] took ${Math.round((Date.now() - started) / 1000)} s in all\n`);
});

const helmIn = (namespace: string, args: string[]) =>
  helm([...args, '--namespace', namespace, '--kubeconfig', cp.kubeconfig]);

interface Workload {
  metadata: { name: string; generation: number };
  spec: { replicas?: number };
  status?: {
    observedGeneration?: number;
    readyReplicas?: number;
    updatedReplicas?: number;
    replicas?: number;
  };
}
interface Pdb {
  metadata: { name: string; generation: number };
  status?: {
    observedGeneration?: number;
    currentHealthy?: number;
    desiredHealthy?: number;
    expectedPods?: number;
  };
}

/** Every Deployment, StatefulSet and PDB of the release at its desired state; what is not, named. */
async function notSettled(namespace: string, release: string): Promise<string[]> {
  const sel = `labelSelector=app.kubernetes.io/instance%3D${release}`;
  const waiting: string[] = [];
  for (const kind of ['deployments', 'statefulsets']) {
    const { items } = await get<{ items: Workload[] }>(
      `/apis/apps/v1/namespaces/${namespace}/${kind}?${sel}`,
    );
    if (items.length === 0) waiting.push(`no ${kind}`);
    for (const w of items) {
      const want = w.spec.replicas ?? 1;
      const s = w.status ?? {};
      if (
        !(
          s.observedGeneration === w.metadata.generation &&
          s.readyReplicas === want &&
          s.updatedReplicas === want
        )
      )
        waiting.push(`${kind}/${w.metadata.name} ${s.readyReplicas ?? 0}/${want} ready`);
    }
  }
  const { items: pdbs } = await get<{ items: Pdb[] }>(
    `/apis/policy/v1/namespaces/${namespace}/poddisruptionbudgets?${sel}`,
  );
  for (const p of pdbs) {
    const s = p.status ?? {};
    if (
      !(
        s.observedGeneration === p.metadata.generation &&
        (s.expectedPods ?? 0) > 0 &&
        (s.currentHealthy ?? 0) >= (s.desiredHealthy ?? 1)
      )
    )
      waiting.push(`pdb/${p.metadata.name} ${s.currentHealthy ?? 0} healthy of ${s.expectedPods ?? 0}`);
  }
  return waiting;
}

async function settle(namespace: string, release: string): Promise<void> {
  let last: string[] = [];
  try {
    await waitUntil(
      `${release} at its desired state`,
      async () => {
        last = await notSettled(namespace, release);
        return last.length === 0;
      },
      300_000,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; still waiting for: ${last.join(', ')}`);
  }
}

const kekOf = async (namespace: string, release: string) =>
  (await get<{ data: { kek: string } }>(`/api/v1/namespaces/${namespace}/secrets/${release}-modelplane-kek`))
    .data.kek;

/** What of the release is still there, by kind (its label, plus its cluster-wide RBAC by name). */
async function leftovers(namespace: string, release: string): Promise<string[]> {
  const sel = `labelSelector=app.kubernetes.io/instance%3D${release}`;
  const paths = [
    `/apis/apps/v1/namespaces/${namespace}/deployments`,
    `/apis/apps/v1/namespaces/${namespace}/statefulsets`,
    `/apis/apps/v1/namespaces/${namespace}/replicasets`,
    `/api/v1/namespaces/${namespace}/pods`,
    `/api/v1/namespaces/${namespace}/services`,
    `/api/v1/namespaces/${namespace}/secrets`,
    `/api/v1/namespaces/${namespace}/configmaps`,
    `/api/v1/namespaces/${namespace}/serviceaccounts`,
    `/api/v1/namespaces/${namespace}/persistentvolumeclaims`,
    `/apis/policy/v1/namespaces/${namespace}/poddisruptionbudgets`,
    `/apis/networking.k8s.io/v1/namespaces/${namespace}/networkpolicies`,
    `/apis/networking.k8s.io/v1/namespaces/${namespace}/ingresses`,
    `/apis/autoscaling/v2/namespaces/${namespace}/horizontalpodautoscalers`,
    `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/roles`,
    `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings`,
    '/apis/rbac.authorization.k8s.io/v1/clusterroles',
    '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
  ];
  const found: string[] = [];
  for (const p of paths) {
    const { items } = await get<{ items: { metadata: { name: string } }[] }>(`${p}?${sel}`);
    for (const i of items) found.push(`${p.split('/').pop()}/${i.metadata.name}`);
  }
  return found.sort();
}

/** Waits until what is left of the release is exactly `kept`; fails naming what is left. */
async function onlyKept(namespace: string, release: string, kept: string[]): Promise<void> {
  const want = JSON.stringify([...kept].sort());
  await waitUntil(
    `only ${kept.join(', ')} left`,
    async () => JSON.stringify(await leftovers(namespace, release)) === want,
    120_000,
  ).catch(async (err) => {
    throw new Error(`${(err as Error).message}; left: ${(await leftovers(namespace, release)).join(', ')}`);
  });
}

describe('the chart on a control plane with real controllers', () => {
  it('default values: installs and settles; the operator serves a Model; upgrade keeps the KEK; uninstall cleans up', async () => {
    const install = await helmIn('modelplane', ['install', 'mp', chartDir]);
    expect(install.code, install.stderr).toBe(0);
    await settle('modelplane', 'mp');
    // Through the scheduler and "kubelets": every pod bound to a kwok node, running, with an IP.
    const { items: released } = await get<{
      items: { spec: { nodeName?: string }; status: { phase: string; podIP?: string } }[];
    }>('/api/v1/namespaces/modelplane/pods?labelSelector=app.kubernetes.io%2Finstance%3Dmp');
    expect(released.length).toBe(5); // operator, console, 2 proxies, Redis
    for (const p of released) {
      expect(p.spec.nodeName).toMatch(/^kwok-node-\d$/);
      expect(p.status.phase).toBe('Running');
      expect(p.status.podIP).toMatch(/^10\.244\./);
    }
    const kek = await kekOf('modelplane', 'mp');

    // The operator from the source tree, as the chart's ServiceAccount (the chart's RBAC only).
    const { status } = await json<{ status: { token: string } }>(
      await cp.api('POST', '/api/v1/namespaces/modelplane/serviceaccounts/mp-modelplane-operator/token', {
        spec: { expirationSeconds: 3600 },
      }),
    );
    const port = await freePort();
    operator = spawn(process.execPath, ['--import', 'tsx', 'operator/main.ts', '--runtime', 'kubernetes'], {
      cwd: repo,
      env: {
        ...process.env,
        KUBECONFIG: writeKubeconfig(cp, status.token),
        REDIS_URL: redis.url,
        OPERATOR_PORT: String(port),
        OPERATOR_LEASE_NAMESPACE: 'modelplane',
        POD_NAME: 'e2e-operator',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    await json(
      await cp.api('POST', '/apis/modelplane.dev/v1alpha1/namespaces/default/models', {
        apiVersion: 'modelplane.dev/v1alpha1',
        kind: 'Model',
        metadata: { name: 'sim-chat' },
        spec: {
          id: 'E2E/Sim-Chat',
          kind: 'chat',
          engine: { type: 'simulator', replicas: 2 },
          pricing: { USD: { input: '0.1', output: '0.2' } },
        },
      }),
    );
    const store = new CatalogueStore(redis.client());
    const entry = await waitUntil(
      'the catalogue lists the model with its two ready pods',
      async () => {
        const e = await store.get('e2e/sim-chat');
        return e && e.endpoints.length === 2 ? e : null;
      },
      180_000,
    );
    const { items: pods } = await get<{
      items: { status: { podIP: string; conditions?: { type: string; status: string }[] } }[];
    }>('/api/v1/namespaces/default/pods?labelSelector=modelplane.dev%2Fmodel%3Dsim-chat');
    const podUrls = pods.map((p) => `http://${p.status.podIP}:9000`).sort();
    expect(entry.endpoints.map((e) => e.url).sort()).toEqual(podUrls);
    // Addresses kwok gave the pods (its --cidr), published by the endpointslice controller.
    for (const e of entry.endpoints) expect(e.url).toMatch(/^http:\/\/10\.244\.\d+\.\d+:9000$/);
    await waitUntil(
      'Model Ready',
      async () => {
        const m = await get<{ status?: { conditions?: { type: string; status: string }[] } }>(
          '/apis/modelplane.dev/v1alpha1/namespaces/default/models/sim-chat',
        );
        return m.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
      },
      60_000,
    );

    // Deleting the Model: the entry goes, and the garbage collector removes its Deployment and pods.
    await json(await cp.api('DELETE', '/apis/modelplane.dev/v1alpha1/namespaces/default/models/sim-chat'));
    await waitUntil(
      'the catalogue entry removed',
      async () => (await store.get('e2e/sim-chat')) === null,
      60_000,
    );
    await waitUntil(
      'the Model’s Deployment, Service and pods garbage-collected',
      async () => {
        const sel = 'labelSelector=modelplane.dev%2Fmodel%3Dsim-chat';
        const lists = await Promise.all(
          [
            `/apis/apps/v1/namespaces/default/deployments?${sel}`,
            `/api/v1/namespaces/default/pods?${sel}`,
            '/api/v1/namespaces/default/services?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dmodelplane-operator',
          ].map((p) => get<{ items: unknown[] }>(p)),
        );
        return lists.every((l) => l.items.length === 0);
      },
      120_000,
    );
    operator.kill('SIGTERM');

    const upgrade = await helmIn('modelplane', ['upgrade', 'mp', chartDir, '--set', 'proxy.replicas=3']);
    expect(upgrade.code, upgrade.stderr).toBe(0);
    await settle('modelplane', 'mp');
    expect(await kekOf('modelplane', 'mp'), 'the upgrade kept the key-encryption key').toBe(kek);

    const uninstall = await helmIn('modelplane', ['uninstall', 'mp', '--wait']);
    expect(uninstall.code, uninstall.stderr).toBe(0);
    // Kept on purpose: the key-encryption key (resource-policy keep) and Redis's data.
    await onlyKept('modelplane', 'mp', [
      'persistentvolumeclaims/data-mp-modelplane-redis-0',
      'secrets/mp-modelplane-kek',
    ]);
  }, 900_000);

  it('every option on: installs and settles (HPA to its minimum, journal volumes bound), then uninstalls', async () => {
    // prometheus-operator's kinds (ServiceMonitor, PodMonitor, PrometheusRule) need its CRDs, which
    // this cluster does not have: those two switches stay off here (test/chart renders them).
    const install = await helmIn('modelplane-full', [
      'install',
      'full',
      chartDir,
      '-f',
      allOnValues,
      '--skip-crds',
      '--set',
      'monitoring.serviceMonitor.enabled=false',
      '--set',
      'monitoring.prometheusRule.enabled=false',
    ]);
    expect(install.code, install.stderr).toBe(0);
    // The HPA (no metrics here) raises the proxies to its minimum, 3; each gets its journal claim.
    await waitUntil(
      'the HPA sets the proxies to its minimum',
      async () =>
        (await get<Workload>('/apis/apps/v1/namespaces/modelplane-full/statefulsets/full-modelplane-proxy'))
          .spec.replicas === 3,
      180_000,
    );
    await settle('modelplane-full', 'full');
    const uninstall = await helmIn('modelplane-full', ['uninstall', 'full', '--wait']);
    expect(uninstall.code, uninstall.stderr).toBe(0);
    await onlyKept('modelplane-full', 'full', [
      'persistentvolumeclaims/data-full-modelplane-redis-0',
      'persistentvolumeclaims/journal-full-modelplane-proxy-0',
      'persistentvolumeclaims/journal-full-modelplane-proxy-1',
      'persistentvolumeclaims/journal-full-modelplane-proxy-2',
      'secrets/full-modelplane-kek',
    ]);
  }, 900_000);
});
