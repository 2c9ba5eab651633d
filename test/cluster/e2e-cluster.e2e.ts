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
  for (let i = 0; i < 10; i++) {
    await json(
      await cp.api('POST', '/api/v1/persistentvolumes', {
        metadata: { name: `pv-${i}` },
        spec: {
          capacity: { storage: '10Gi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: i < 4 ? '' : 'fast',
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
        waiting.push(
          `${kind}/${w.metadata.name} ${s.readyReplicas ?? 0}/${want} ready, ${s.updatedReplicas ?? 0} updated, generation ${s.observedGeneration ?? '-'} of ${w.metadata.generation}`,
        );
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

/** The test's simulator Model, two replicas, in namespace default. */
const createModel = async () =>
  json(
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

const productionValues = new URL('production-values.yaml', import.meta.url).pathname;

interface Pod {
  metadata: { name: string; annotations?: Record<string, string>; deletionTimestamp?: string };
  spec: {
    containers: {
      command?: string[];
      env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string } } }[];
    }[];
  };
  status?: { phase?: string };
}

/**
 * Every running pod of the release's operator, proxies and console reads Redis and the journal
 * from the production Secrets and carries its workload's current stores checksum.
 */
async function stores(namespace: string, release: string): Promise<boolean> {
  const { items } = await get<{ items: Pod[] }>(
    `/api/v1/namespaces/${namespace}/pods?labelSelector=app.kubernetes.io%2Finstance%3D${release}`,
  );
  const parts = items.filter((p) => !p.metadata.deletionTimestamp);
  if (parts.length !== 4) return false; // operator, console, 2 proxies
  const sums = new Set(parts.map((p) => p.metadata.annotations?.['checksum/stores']));
  return (
    sums.size === 1 &&
    parts.every((p) => {
      const env = p.spec.containers[0]?.env ?? [];
      const from = (n: string) => env.find((e) => e.name === n)?.valueFrom?.secretKeyRef?.name;
      return from('REDIS_URL') === 'prod-redis' && from('DATABASE_URL') === 'prod-journal';
    })
  );
}

/** The engines' Deployments and pods of the test's Model namespace. */
async function engineObjects(): Promise<string[]> {
  const sel = 'labelSelector=app.kubernetes.io%2Fmanaged-by%3Dmodelplane-operator';
  const out: string[] = [];
  for (const p of ['/apis/apps/v1/namespaces/default/deployments', '/api/v1/namespaces/default/pods']) {
    const { items } = await get<{ items: { metadata: { name: string } }[] }>(`${p}?${sel}`);
    out.push(...items.map((i) => i.metadata.name));
  }
  return out;
}

/**
 * kwok runs no containers, so the test is the hook pod's kubelet: once helm has created the
 * pre-delete pod, it runs the pod's program (dist/operator/uninstall.js is operator/uninstall.ts
 * compiled) from the source tree, as the pod's ServiceAccount with the pod's env, and reports the
 * pod Succeeded as a kubelet would when it exits 0.
 */
async function runUninstallHook(namespace: string, release: string): Promise<void> {
  const name = `${release}-modelplane-uninstall`;
  const pod = await waitUntil(
    'helm creates the pre-delete hook pod and it is scheduled and started',
    async () => {
      // Started first (kwok gave it an address): a status written before that, kwok overwrites.
      const r = await cp.api('GET', `/api/v1/namespaces/${namespace}/pods/${name}`);
      const p = r.ok ? ((await r.json()) as Pod) : null;
      return p?.status?.phase === 'Running' ? p : null;
    },
    60_000,
  );
  const container = pod.spec.containers[0];
  expect(container?.command).toEqual(['/usr/bin/node', '/app/dist/operator/uninstall.js']);
  const { status } = await json<{ status: { token: string } }>(
    await cp.api('POST', `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`, {
      spec: { expirationSeconds: 600 },
    }),
  );
  const env = Object.fromEntries((container?.env ?? []).map((e) => [e.name, e.value ?? '']));
  const code = await new Promise<number | null>((done) => {
    const p = spawn(process.execPath, ['--import', 'tsx', 'operator/uninstall.ts'], {
      cwd: repo,
      env: { ...process.env, ...env, KUBECONFIG: writeKubeconfig(cp, status.token) },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    p.on('exit', done);
  });
  expect(code, 'the uninstall hook exits 0').toBe(0);
  await json(
    await cp.api(
      'PATCH',
      `/api/v1/namespaces/${namespace}/pods/${name}/status`,
      { status: { phase: 'Succeeded' } },
      'application/merge-patch+json',
    ),
  );
}

interface IngressList {
  items: {
    metadata: { name: string };
    spec: {
      rules: {
        host: string;
        http: {
          paths: { backend: { service: { name: string; port: { number?: number; name?: string } } } }[];
        };
      }[];
    };
  }[];
}

/** Each Ingress path whose backend is not a port of an existing Service with a ready endpoint. */
async function ingressBackendProblems(ns: string): Promise<string[]> {
  const problems: string[] = [];
  const { items } = await get<IngressList>(`/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses`);
  for (const ingress of items)
    for (const rule of ingress.spec.rules)
      for (const { backend } of rule.http.paths) {
        const { name, port } = backend.service;
        const at = `${ingress.metadata.name} ${rule.host} → ${name}:${port.number ?? port.name}`;
        const svc = await cp.api('GET', `/api/v1/namespaces/${ns}/services/${name}`);
        if (!svc.ok) {
          problems.push(`${at}: no such Service`);
          continue;
        }
        const ports = ((await svc.json()) as { spec: { ports: { port: number; name?: string }[] } }).spec
          .ports;
        if (!ports.some((p) => p.port === port.number || (port.name !== undefined && p.name === port.name)))
          problems.push(`${at}: the Service has no such port`);
        const slices = await get<{ items: { endpoints?: { conditions?: { ready?: boolean } }[] }[] }>(
          `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D${name}`,
        );
        const ready = slices.items
          .flatMap((s) => s.endpoints ?? [])
          .filter((e) => e.conditions?.ready !== false);
        if (ready.length === 0) problems.push(`${at}: no ready endpoint`);
      }
  return problems;
}

/** The value of an env variable of a workload's first container. */
async function containerEnv(ns: string, workload: string, variable: string): Promise<string | undefined> {
  const o = await get<{
    spec: { template: { spec: { containers: { env?: { name: string; value?: string }[] }[] } } };
  }>(`/apis/apps/v1/namespaces/${ns}/${workload}`);
  return o.spec.template.spec.containers[0]?.env?.find((e) => e.name === variable)?.value;
}

describe('the chart on a control plane with real controllers', () => {
  it('default values: installs and settles; the operator serves a Model; an upgrade to production values is refused whole, then applies with every part on the new stores; uninstall stops the engines; reinstall', async () => {
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
    await createModel();
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
    // Production settings by `helm upgrade` (test/cluster/production-values.yaml): first refused
    // whole, before anything is applied, because the proxies' volume claims would change.
    for (const [name, url] of [
      ['prod-redis', redis.url],
      ['prod-journal', 'postgres://modelplane@journal.example:5432/modelplane'],
    ])
      await json(
        await cp.api('POST', '/api/v1/namespaces/modelplane/secrets', {
          metadata: { name },
          stringData: { url },
        }),
      );
    const operatorBefore = await get<Workload>(
      '/apis/apps/v1/namespaces/modelplane/deployments/mp-modelplane-operator',
    );
    const redisUrlBefore = await get<{ data: { url: string } }>(
      '/api/v1/namespaces/modelplane/secrets/mp-modelplane-redis-url',
    );
    const refused = await helmIn('modelplane', ['upgrade', 'mp', chartDir, '-f', productionValues]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('proxy.journal.persistence');
    expect(refused.stderr).toContain(
      'kubectl -n modelplane delete statefulset mp-modelplane-proxy --cascade=foreground',
    );
    expect(
      (await get<Workload>('/apis/apps/v1/namespaces/modelplane/deployments/mp-modelplane-operator')).metadata
        .generation,
      'nothing applied',
    ).toBe(operatorBefore.metadata.generation);
    expect(
      (await get<{ data: { url: string } }>('/api/v1/namespaces/modelplane/secrets/mp-modelplane-redis-url'))
        .data.url,
    ).toBe(redisUrlBefore.data.url);
    // What the refusal says to do, then the same upgrade again: it applies, and every part rolls.
    const proxySts = '/apis/apps/v1/namespaces/modelplane/statefulsets/mp-modelplane-proxy';
    await json(await cp.api('DELETE', proxySts, { propagationPolicy: 'Foreground' }));
    await waitUntil(
      'the proxies’ StatefulSet gone with its pods',
      async () => (await cp.api('GET', proxySts)).status === 404,
      120_000,
    );
    const upgrade = await helmIn('modelplane', ['upgrade', 'mp', chartDir, '-f', productionValues]);
    expect(upgrade.code, upgrade.stderr).toBe(0);
    await settle('modelplane', 'mp');
    expect(await kekOf('modelplane', 'mp'), 'the upgrade kept the key-encryption key').toBe(kek);
    await waitUntil(
      'every part on the new stores, no pod left on the old',
      async () => stores('modelplane', 'mp'),
      180_000,
    );
    const { items: kinds } = await get<{ items: unknown[] }>(
      '/apis/apps/v1/namespaces/modelplane/statefulsets?labelSelector=app.kubernetes.io%2Fcomponent%3Dredis',
    );
    expect(kinds, 'the bundled Redis is gone').toEqual([]);
    const ingresses = await get<{
      items: { metadata: { name: string }; spec: { rules: { host: string }[] } }[];
    }>('/apis/networking.k8s.io/v1/namespaces/modelplane/ingresses');
    expect(ingresses.items.map((i) => `${i.metadata.name} ${i.spec.rules[0]?.host}`).sort()).toEqual([
      'mp-modelplane-console console.example.com',
      'mp-modelplane-proxy api.example.com',
    ]);
    // The path from outside as far as this cluster has one (kwok runs no container and there is no
    // ingress controller, so nothing answers HTTP here): each Ingress sends its host to a Service
    // port that exists and has ready endpoints, and the console calls the API at the proxy's
    // public host, which allows the console's origin.
    await waitUntil(
      'every ingress backend a Service port with ready endpoints',
      async () => (await ingressBackendProblems('modelplane')).length === 0,
      60_000,
    ).catch(async () => expect(await ingressBackendProblems('modelplane')).toEqual([]));
    expect(
      await containerEnv('modelplane', 'deployments/mp-modelplane-console', 'CONSOLE_API_BASE_URL'),
    ).toBe('https://api.example.com/v1');
    expect(
      await containerEnv('modelplane', 'statefulsets/mp-modelplane-proxy', 'PROXY_CORS_ORIGINS'),
    ).toContain('https://console.example.com');

    // Uninstall with a Model running: the pre-delete hook deletes it and waits for its engines.
    await createModel();
    await waitUntil(
      'the Model served again',
      async () => (await store.get('e2e/sim-chat'))?.endpoints.length === 2,
      180_000,
    );
    expect((await engineObjects()).length, 'the engine Deployment and its pods run').toBeGreaterThanOrEqual(
      3,
    );
    const uninstalling = helmIn('modelplane', ['uninstall', 'mp', '--wait', '--timeout', '5m']);
    await runUninstallHook('modelplane', 'mp');
    const uninstall = await uninstalling;
    expect(uninstall.code, uninstall.stderr).toBe(0);
    expect(await engineObjects(), 'no engine left running').toEqual([]);
    expect(
      await get<{ items: unknown[] }>('/apis/modelplane.dev/v1alpha1/models').then((l) => l.items),
    ).toEqual([]);
    expect(await store.get('e2e/sim-chat'), 'the operator removed the catalogue entry').toBeNull();
    // Kept on purpose: the key-encryption key (resource-policy keep) and the journals' claims.
    await onlyKept('modelplane', 'mp', [
      'persistentvolumeclaims/data-mp-modelplane-redis-0',
      'persistentvolumeclaims/journal-mp-modelplane-proxy-0',
      'persistentvolumeclaims/journal-mp-modelplane-proxy-1',
      'secrets/mp-modelplane-kek',
    ]);
    // No Model holds a finalizer, so the CRD goes at once when asked; a reinstall brings it back.
    await json(
      await cp.api('DELETE', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/models.modelplane.dev'),
    );
    await waitUntil(
      'the CRD deleted',
      async () =>
        (await cp.api('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/models.modelplane.dev'))
          .status === 404,
      60_000,
    );
    operator.kill('SIGTERM');
    const again = await helmIn('modelplane', ['install', 'mp', chartDir, '-f', productionValues]);
    expect(again.code, again.stderr).toBe(0);
    await settle('modelplane', 'mp');
    expect(await kekOf('modelplane', 'mp'), 'the reinstall found the kept key').toBe(kek);
    await waitUntil('the reinstalled release on its stores', async () => stores('modelplane', 'mp'), 120_000);
    await waitUntil(
      'the CRD back',
      async () =>
        (await cp.api('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/models.modelplane.dev'))
          .ok,
      30_000,
    );
    const last = await helmIn('modelplane', ['uninstall', 'mp', '--no-hooks', '--wait']);
    expect(last.code, last.stderr).toBe(0);
  }, 900_000);

  it('every option on: installs and settles (HPA to its minimum, journal volumes bound), then uninstalls', async () => {
    // prometheus-operator's kinds (ServiceMonitor, PodMonitor, PrometheusRule) and the Gateway API's
    // HTTPRoute need CRDs this cluster does not have: those switches stay off here (test/chart
    // renders them).
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
      '--set',
      'proxy.httpRoute.enabled=false',
      '--set',
      'uninstall.timeoutSeconds=1',
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
    // A Model holding the operator's finalizer while no operator runs (it crashed, say): the hook
    // takes the finalizer off after uninstall.timeoutSeconds, and nothing hangs.
    await json(
      await cp.api('POST', '/apis/modelplane.dev/v1alpha1/namespaces/models/models', {
        apiVersion: 'modelplane.dev/v1alpha1',
        kind: 'Model',
        metadata: { name: 'orphan', finalizers: ['modelplane.dev/catalogue'] },
        spec: {
          id: 'E2E/Orphan',
          kind: 'chat',
          engine: { type: 'simulator', replicas: 1 },
          pricing: { USD: { input: '0.1', output: '0.2' } },
        },
      }),
    );
    const uninstalling = helmIn('modelplane-full', ['uninstall', 'full', '--wait']);
    await runUninstallHook('modelplane-full', 'full');
    const uninstall = await uninstalling;
    expect(uninstall.code, uninstall.stderr).toBe(0);
    expect(
      (await get<{ items: unknown[] }>('/apis/modelplane.dev/v1alpha1/namespaces/models/models')).items,
      'the Model no operator released is gone',
    ).toEqual([]);
    await onlyKept('modelplane-full', 'full', [
      'persistentvolumeclaims/data-full-modelplane-redis-0',
      'persistentvolumeclaims/journal-full-modelplane-proxy-0',
      'persistentvolumeclaims/journal-full-modelplane-proxy-1',
      'persistentvolumeclaims/journal-full-modelplane-proxy-2',
      'secrets/full-modelplane-kek',
    ]);
  }, 900_000);
});
