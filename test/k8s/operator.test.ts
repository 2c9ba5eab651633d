// The operator against a real kube-apiserver + etcd and a real Redis. There is no kubelet or
// controller-manager: the test writes the EndpointSlice a ready pod would produce, pointing at a
// running simulator, and garbage collection never runs (we check the owner references it needs).
import { readdirSync, readFileSync } from 'node:fs';
import { ApiException } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CatalogueStore } from '../../core/catalogue/store.ts';
import { startSimulator } from '../../engines/simulator/server.ts';
import { chatModel, invalidModels, outOfBounds, withSpec } from '../../operator/fixtures.ts';
import { modelCrd } from '../../operator/kube/crd.ts';
import { startMetricsServer } from '../../operator/metrics.ts';
import { FINALIZER, type Model } from '../../operator/model/model.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { startCluster, type TestCluster } from './cluster.ts';
import {
  apis,
  createModel,
  getTable,
  modelRef,
  type OperatorReplica,
  readModel,
  readySlice,
  startOperator,
  waitUntil,
} from './helpers.ts';

let cluster: TestCluster;
let redis: TestRedis;
let store: CatalogueStore;
let sim: Awaited<ReturnType<typeof startSimulator>>;
let operator: OperatorReplica;
const ID = 'Meta-Llama/Llama-3.1-8B-Instruct';

beforeAll(async () => {
  // First run builds kube-apiserver from source (minutes); later runs take seconds.
  [cluster, redis, sim] = await Promise.all([
    startCluster(),
    startRedis(),
    startSimulator({ models: [ID], host: '127.0.0.1' }),
  ]);
  store = new CatalogueStore(redis.client());
  operator = await startOperator(cluster, redis.client(), 'op-a');
  await waitUntil('op-a to lead', async () => operator.runtime.leader.isLeader);
}, 900_000);

afterAll(async () => {
  await operator?.stop();
  await Promise.all([cluster?.stop(), redis?.stop(), sim?.close()]);
});

describe('operator on a real kube-apiserver', () => {
  it('a new Model gets a finalizer, a Deployment and a Service owned by it, and a status', async () => {
    const created = await createModel(cluster, chatModel('llama'));
    const { apps, core } = apis(cluster);
    const deployment = await waitUntil('Deployment', () =>
      apps.readNamespacedDeployment({ name: 'model-llama', namespace: 'default' }),
    );
    const service = await waitUntil('Service', () =>
      core.readNamespacedService({ name: 'model-llama', namespace: 'default' }),
    );
    for (const owned of [deployment, service]) {
      expect(owned.metadata?.ownerReferences).toEqual([
        expect.objectContaining({
          kind: 'Model',
          name: 'llama',
          uid: created.metadata.uid,
          controller: true,
        }),
      ]);
    }
    expect(deployment.spec?.template.spec?.containers[0]?.args).toContain(ID);
    const model = await waitUntil('status', async () => {
      const m = await readModel(cluster, 'llama');
      return m.status?.conditions?.length ? m : undefined;
    });
    expect(model.metadata.finalizers).toContain(FINALIZER);
    expect(model.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'WaitingForEndpoints',
    });
    // Catalogued with no endpoint: callers get a retryable 500 (Retry-After), not a 404.
    const waiting = await waitUntil('catalogued without an endpoint', () => store.get(ID.toLowerCase()));
    expect(waiting.endpoints).toEqual([]);
  });

  it('CAT-2 a ready EndpointSlice catalogues the model under its canonical id (slash, mixed case) with the endpoint, which answers', async () => {
    await apis(cluster).discovery.createNamespacedEndpointSlice({
      namespace: 'default',
      body: readySlice('model-llama', sim.port),
    });
    const entry = await waitUntil('catalogue entry with its endpoint', async () => {
      const e = await store.get(ID.toLowerCase());
      return e && e.endpoints.length > 0 ? e : undefined;
    });
    expect(entry).toMatchObject({
      id: ID,
      kind: 'chat',
      endpoints: [{ url: sim.url }],
      source: 'Model/default/llama',
    });
    const model = await readModel(cluster, 'llama');
    expect(entry.created).toBe(Math.floor(Date.parse(String(model.metadata.creationTimestamp)) / 1000));
    const res = await fetch(`${entry.endpoints[0]!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: ID, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
    });
    expect(res.status).toBe(200);
    const ready = await waitUntil('Ready=True', async () => {
      const m = await readModel(cluster, 'llama');
      return m.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
    });
    expect(ready.reason).toBe('EndpointsReady');
  });

  it('kubectl get models shows ID, Kind, Ready, Replicas, Available, Demand, Profile, Problem and Scaling (-o wide), Age', async () => {
    const table = await getTable(cluster, '/apis/modelplane.dev/v1alpha1/namespaces/default/models');
    // The names themselves are operator/model/crd/crd.test.ts's: here, that the server renders every one.
    const columns = modelCrd().spec.versions[0]!.additionalPrinterColumns.map((c) => c.name);
    expect(table.columnDefinitions.map((c) => c.name)).toEqual(['Name', ...columns]);
    expect(table.rows[0]?.cells.slice(0, 4)).toEqual(['llama', ID, 'chat', 'True']);
  });

  it('CAT-1 a price change reaches the live catalogue within 1 s', async () => {
    const started = Date.now();
    await apis(cluster).custom.patchNamespacedCustomObject({
      ...modelRef('llama'),
      body: [{ op: 'replace', path: '/spec/pricing/USD/input', value: '0.25' }],
    });
    await waitUntil(
      'input 0.25',
      async () => ((await store.get(ID))?.pricing.USD as { input?: string } | undefined)?.input === '0.25',
      1_000,
    );
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('the scale subresource drives the Deployment replicas', async () => {
    await apis(cluster).custom.patchNamespacedCustomObjectScale({
      ...modelRef('llama'),
      body: [{ op: 'replace', path: '/spec/replicas', value: 3 }],
    });
    await waitUntil('3 replicas', async () => {
      const d = await apis(cluster).apps.readNamespacedDeployment({
        name: 'model-llama',
        namespace: 'default',
      });
      return d.spec?.replicas === 3;
    });
  });

  it.each(invalidModels.map((c, i) => ({ ...c, i })))(
    'the API server rejects $name with the CEL message',
    async ({ spec, message, i }) => {
      const bad = withSpec(chatModel(`bad-${i}`), spec);
      const err = await createModel(cluster, bad).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ApiException);
      expect((err as ApiException<unknown>).code).toBe(422);
      expect(String((err as ApiException<unknown>).body)).toContain(message);
    },
  );

  it.each(outOfBounds.map((c, i) => ({ ...c, i })))(
    'the API server rejects $name, naming the field',
    async ({ spec, field, i }) => {
      const err = await createModel(cluster, withSpec(chatModel(`bounds-${i}`), spec)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ApiException);
      expect((err as ApiException<unknown>).code).toBe(422);
      expect(String((err as ApiException<unknown>).body)).toContain(field);
    },
  );

  it('the CRD generated from zod: int-or-string fields take both forms, the defaults are filled in, spec.id and spec.engine.weights refuse a change', async () => {
    const m = chatModel('shapes', {
      id: 'acme/Shapes',
      engine: {
        type: 'simulator',
        resources: { requests: { cpu: 2, memory: '8Gi' } },
        rollout: { maxSurge: '25%', maxUnavailable: 0 },
        weights: { source: { huggingFace: { repo: 'acme/shapes' } } },
      },
    });
    await createModel(cluster, m);
    const stored = await readModel(cluster, 'shapes');
    expect(stored.spec.engine).toMatchObject({
      resources: { requests: { cpu: 2, memory: '8Gi' } },
      rollout: { maxSurge: '25%', maxUnavailable: 0 },
    });
    expect(stored.spec).toMatchObject({ availability: 'available', region: 'global' });
    for (const [path, value, message] of [
      ['/spec/id', 'acme/Other', 'spec.id is immutable'],
      ['/spec/engine/weights/source/huggingFace/repo', 'acme/other', 'spec.engine.weights is immutable'],
    ] as const) {
      const err = await apis(cluster)
        .custom.patchNamespacedCustomObject({ ...modelRef('shapes'), body: [{ op: 'replace', path, value }] })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect((err as ApiException<unknown>).code).toBe(422);
      expect(String((err as ApiException<unknown>).body)).toContain(message);
    }
    await apis(cluster).custom.deleteNamespacedCustomObject(modelRef('shapes'));
    await waitUntil('shapes gone', () =>
      readModel(cluster, 'shapes').then(
        () => false,
        (e: unknown) => e instanceof ApiException && e.code === 404,
      ),
    );
  });

  it('deleting a Model removes its entry, then the finalizer; owned objects stay for the GC', async () => {
    const uid = (await readModel(cluster, 'llama')).metadata.uid;
    await apis(cluster).custom.deleteNamespacedCustomObject(modelRef('llama'));
    await waitUntil('entry removed', async () => (await store.get(ID)) === null);
    await waitUntil('Model gone', () =>
      readModel(cluster, 'llama').then(
        () => false,
        (e: unknown) => e instanceof ApiException && e.code === 404,
      ),
    );
    const d = await apis(cluster).apps.readNamespacedDeployment({
      name: 'model-llama',
      namespace: 'default',
    });
    expect(d.metadata?.ownerReferences?.[0]).toMatchObject({ uid, blockOwnerDeletion: true });
  });

  it('an external model goes straight to the catalogue at its URL', async () => {
    const m = withSpec(chatModel('ext'), {
      id: 'acme/External-Chat',
      engine: undefined,
      external: { url: sim.url },
    });
    await createModel(cluster, m);
    const entry = await waitUntil('external entry', () => store.get('acme/external-chat'));
    expect(entry.endpoints).toEqual([{ url: sim.url }]);
    await expect(
      apis(cluster).apps.readNamespacedDeployment({ name: 'model-ext', namespace: 'default' }),
    ).rejects.toMatchObject({ code: 404 });
  });

  it('aliases reach the catalogue; a newer Model yields a taken alias with Degraded AliasConflict, and gets it once freed', async () => {
    const ext = (name: string, id: string, aliases: string[]) =>
      withSpec(chatModel(name), { id, engine: undefined, external: { url: sim.url }, aliases });
    // alias-a first: older, or (created in the same second) first by name — either way it holds `shared`.
    await createModel(cluster, ext('alias-a', 'acme/Alias-A', ['claude-haiku-*', 'shared']));
    await waitUntil('alias-a entry', () => store.get('acme/alias-a'));
    await createModel(cluster, ext('alias-b', 'acme/Alias-B', ['SHARED', 'acme/external-chat', 'own']));
    const degraded = await waitUntil('AliasConflict on alias-b', async () =>
      (await readModel(cluster, 'alias-b')).status?.conditions?.find((c) => c.reason === 'AliasConflict'),
    );
    expect(degraded).toMatchObject({ type: 'Degraded', status: 'True' });
    expect(degraded.message).toContain('SHARED (the alias of Model/default/alias-a)');
    expect(degraded.message).toContain('acme/external-chat (the id of Model/default/ext)');
    expect((await store.get('acme/alias-a'))?.aliases).toEqual(['claude-haiku-*', 'shared']);
    expect((await store.get('acme/alias-b'))?.aliases).toEqual(['own']);
    // Freeing the alias on alias-a hands it to alias-b without touching alias-b.
    await apis(cluster).custom.patchNamespacedCustomObject({
      ...modelRef('alias-a'),
      body: [{ op: 'replace', path: '/spec/aliases', value: ['claude-haiku-*'] }],
    });
    await waitUntil(
      'alias-b gets SHARED',
      async () => (await store.get('acme/alias-b'))?.aliases.join() === 'SHARED,own',
    );
    // Leave the external model alone, as the tests after this one expect.
    for (const name of ['alias-a', 'alias-b'])
      await apis(cluster).custom.deleteNamespacedCustomObject(modelRef(name));
    await waitUntil(
      'alias entries gone',
      async () => (await store.get('acme/alias-b')) === null && (await store.get('acme/alias-a')) === null,
    );
    const gone = (name: string) =>
      readModel(cluster, name).then(
        () => false,
        (e: unknown) => e instanceof ApiException && e.code === 404,
      );
    await waitUntil('alias Models gone', async () => (await gone('alias-a')) && (await gone('alias-b')));
  });

  it('serves Prometheus metrics on /metrics and health on /healthz', async () => {
    const server = await startMetricsServer(operator.metrics, operator.runtime, 0, '127.0.0.1');
    try {
      // The models gauge reads the informer's cache: the external Model's Ready status, patched
      // after its catalogue entry was written (what the test before waited for), shows once its
      // watch event has come back — on a loaded machine a moment after.
      const metrics = await waitUntil('Ready=True in the models gauge', async () => {
        const text = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
        return /modelplane_operator_models\{condition="Ready",status="True"\} 1/.test(text) ? text : null;
      });
      expect(metrics).toMatch(/modelplane_operator_reconciles_total\{result="success"\} [1-9]/);
      expect(metrics).toMatch(/modelplane_operator_models\{condition="Ready",status="True"\} 1/);
      expect(metrics).toContain('modelplane_operator_leader 1');
      const health = await fetch(`http://127.0.0.1:${server.port}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ ok: true, runtime: 'kubernetes', leader: true });
    } finally {
      await server.close();
    }
  });

  it('an operator restart mid-way converges to the same state', async () => {
    await operator.stop();
    // While no operator runs: a new Model with a ready slice, and a price change on another.
    await createModel(cluster, withSpec(chatModel('late'), { id: 'acme/Late-Model' }));
    await apis(cluster).discovery.createNamespacedEndpointSlice({
      namespace: 'default',
      body: readySlice('model-late', sim.port),
    });
    await apis(cluster).custom.patchNamespacedCustomObject({
      ...modelRef('ext'),
      body: [{ op: 'replace', path: '/spec/pricing/USD/output', value: '9' }],
    });
    operator = await startOperator(cluster, redis.client(), 'op-b');
    await waitUntil('late entry', () => store.get('acme/late-model'));
    await waitUntil('ext price', async () => (await store.get('acme/external-chat'))?.pricing.USD, 5_000);
    await waitUntil('ext output 9', async () => {
      const p = (await store.get('acme/external-chat'))?.pricing.USD as { output?: string } | undefined;
      return p?.output === '9';
    });
    const late: Model = await readModel(cluster, 'late');
    expect(late.metadata.finalizers).toContain(FINALIZER);
    await apis(cluster).apps.readNamespacedDeployment({ name: 'model-late', namespace: 'default' });
  });

  it('two replicas: exactly one leader; the other takes over when it stops', async () => {
    const second = await startOperator(cluster, redis.client(), 'op-c');
    try {
      await new Promise((r) => setTimeout(r, 1_000));
      const leaders = [operator, second].filter((o) => o.runtime.leader.isLeader);
      expect(leaders).toHaveLength(1);
      expect(leaders[0]).toBe(operator);
      await operator.stop();
      await waitUntil('op-c to lead', async () => second.runtime.leader.isLeader, 5_000);
      // The new leader reconciles: a change made now reaches the catalogue.
      await apis(cluster).custom.patchNamespacedCustomObject({
        ...modelRef('late'),
        body: [{ op: 'replace', path: '/spec/region', value: 'eu-west' }],
      });
      await waitUntil('region', async () => (await store.get('acme/late-model'))?.region === 'eu-west');
      const lease = await apis(cluster).coordination.readNamespacedLease({
        name: 'modelplane-operator',
        namespace: 'default',
      });
      expect(lease.spec?.holderIdentity).toBe('op-c');
    } finally {
      operator = second;
    }
  });
});

describe('examples/models against the API server', () => {
  const root = new URL('../../examples/models/', import.meta.url);
  const files = [
    ...readdirSync(root).filter((f) => f.endsWith('.yaml')),
    ...readdirSync(new URL('cluster/', root)).map((f) => `cluster/${f}`),
  ];
  it.each(files)('%s passes the CRD schema and CEL rules (server dry run)', async (file) => {
    const body = parse(readFileSync(new URL(file, root), 'utf8')) as Model;
    const { group, version, plural } = modelRef(body.metadata.name);
    await apis(cluster).custom.createNamespacedCustomObject({
      group,
      version,
      plural,
      namespace: 'default',
      body,
      dryRun: 'All',
    });
  });
});
