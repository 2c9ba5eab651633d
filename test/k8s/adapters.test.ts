// An adapter Model (spec.adapter) on a real kube-apiserver: its conditions while the base is
// missing or cannot load adapters, then loaded at runtime on every ready base engine and catalogued
// under its own id and prices with those engines as its endpoints; deleted, unloaded from them
// again. No kubelet here: the base's EndpointSlices name two loopback simulators, which serve
// vLLM's runtime LoRA routes and, like vLLM, answer 404 for a model they do not hold.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CatalogueStore } from '../../core/catalogue/store.ts';
import { type Simulator, startSimulator } from '../../engines/simulator/server.ts';
import { loadedAdapters } from '../../operator/adapters/apply.ts';
import { chatModel } from '../../operator/fixtures.ts';
import { FINALIZER, type Model } from '../../operator/model/model.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { startCluster, type TestCluster } from './cluster.ts';
import {
  apis,
  createModel,
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
let sims: Simulator[];
let operator: OperatorReplica;
const BASE_ID = 'Meta-Llama/Llama-3.1-8B-Instruct';
const ADAPTER_ID = 'acme/llama-tone';

beforeAll(async () => {
  let a: Simulator;
  let b: Simulator;
  [cluster, redis, a, b] = await Promise.all([
    startCluster(),
    startRedis(),
    startSimulator({ models: [BASE_ID], host: '127.0.0.1', knownModelsOnly: true }),
    startSimulator({ models: [BASE_ID], host: '127.0.0.1', knownModelsOnly: true }),
  ]);
  sims = [a, b];
  store = new CatalogueStore(redis.client());
  operator = await startOperator(cluster, redis.client(), 'op-adapters');
  await waitUntil('the operator to lead', async () => operator.runtime.leader.isLeader);
}, 900_000);

afterAll(async () => {
  await operator?.stop();
  await Promise.all([cluster?.stop(), redis?.stop(), ...(sims ?? []).map((s) => s.close())]);
});

const adapterCondition = async (name: string, reason: string) =>
  waitUntil(`${name}: AdapterLoaded ${reason}`, async () => {
    const m = await readModel(cluster, name);
    return m.status?.conditions?.find((c) => c.type === 'AdapterLoaded' && c.reason === reason)
      ? m
      : undefined;
  });

/** An adapter Model of the base `llama`, its weights at /adapters/<name>. */
const createAdapter = (name: string, id: string) =>
  createModel(
    cluster,
    chatModel(name, { id, engine: undefined, adapter: { base: 'llama', source: `/adapters/${name}` } }),
  );

/** The Model no longer readable: its finalizer came off and the API server deleted it. */
const modelGone = (name: string) =>
  waitUntil(
    `${name} gone`,
    () =>
      readModel(cluster, name).then(
        () => false,
        () => true,
      ),
    30_000,
  );

describe('an adapter Model on a real kube-apiserver', () => {
  it('with its base missing: AdapterLoaded False BaseMissing, Ready False, Degraded, catalogued with no endpoint', async () => {
    await createModel(
      cluster,
      chatModel('tone', {
        id: ADAPTER_ID,
        engine: undefined,
        adapter: { base: 'llama', source: '/adapters/tone' },
        pricing: { USD: { input: '0.30', output: '1.20' } },
      }),
    );
    const m = await adapterCondition('tone', 'BaseMissing');
    const byType = (t: string) => m.status?.conditions?.find((c) => c.type === t);
    expect(byType('AdapterLoaded')).toMatchObject({
      status: 'False',
      message: 'base model llama does not exist',
    });
    expect(byType('Ready')).toMatchObject({ status: 'False', reason: 'BaseMissing' });
    expect(byType('Degraded')).toMatchObject({ status: 'True', reason: 'BaseMissing' });
    // No Deployment or Service of its own.
    await expect(
      apis(cluster).apps.readNamespacedDeployment({ name: 'model-tone', namespace: 'default' }),
    ).rejects.toThrow();
    const entry = await waitUntil('catalogued', () => store.get(ADAPTER_ID));
    expect(entry.endpoints).toEqual([]);
  });

  it('with a base whose engine has no lora: BaseCannotLoadAdapters, nothing loaded', async () => {
    await createModel(cluster, chatModel('llama', { engine: { type: 'simulator' } }));
    const { discovery } = apis(cluster);
    const [a, b] = sims as [Simulator, Simulator];
    await discovery.createNamespacedEndpointSlice({
      namespace: 'default',
      body: readySlice('model-llama', a.port),
    });
    const second = readySlice('model-llama', b.port);
    second.metadata!.name = 'model-llama-test-2';
    await discovery.createNamespacedEndpointSlice({ namespace: 'default', body: second });
    await adapterCondition('tone', 'BaseCannotLoadAdapters');
    expect(await loadedAdapters(a.url)).toEqual([]);
  });

  it('once the base allows runtime loading: loaded on both base engines, catalogued under its own id, prices and endpoints', async () => {
    await apis(cluster).custom.patchNamespacedCustomObject({
      ...modelRef('llama'),
      body: [{ op: 'add', path: '/spec/engine/lora', value: { maxLoras: 4 } }],
    });
    const m: Model = await adapterCondition('tone', 'Loaded');
    expect(m.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'True',
      reason: 'AdapterLoaded',
    });
    expect(m.status?.readyReplicas).toBe(2);
    for (const s of sims) expect(await loadedAdapters(s.url)).toEqual([ADAPTER_ID]);
    const entry = await waitUntil('catalogued on both engines', async () => {
      const e = await store.get(ADAPTER_ID);
      return e && e.endpoints.length === 2 ? e : undefined;
    });
    expect(entry.endpoints.map((e) => e.url).sort()).toEqual(sims.map((s) => s.url).sort());
    expect(entry.pricing.USD).toMatchObject({ input: '0.30', output: '1.20' });
    expect(entry.source).toBe('Model/default/tone');
    // The engine answers under the adapter's name, which is what the proxy sends as `model`.
    const res = await fetch(`${sims[0]!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: ADAPTER_ID, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
    });
    expect(res.status).toBe(200);
  });

  it('an engine that restarted without the adapter gets it again when its pod comes back', async () => {
    const [a] = sims as [Simulator];
    // What a restarted engine looks like from outside: it lists no adapter.
    await fetch(`${a.url}/v1/unload_lora_adapter`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ lora_name: ADAPTER_ID }),
    });
    expect(await loadedAdapters(a.url)).toEqual([]);
    // ...and its pod going not ready and ready again rewrites the base's slice.
    const { discovery } = apis(cluster);
    const flip = async (ready: boolean) =>
      discovery.patchNamespacedEndpointSlice({
        name: 'model-llama-test',
        namespace: 'default',
        body: [{ op: 'replace', path: '/endpoints/0/conditions/ready', value: ready }],
      });
    await flip(false);
    await waitUntil('the adapter published on one engine', async () => {
      const e = await store.get(ADAPTER_ID);
      return e && e.endpoints.length === 1 ? e : undefined;
    });
    await flip(true);
    await waitUntil('reloaded on the engine that came back', async () => {
      const held = await loadedAdapters(a.url);
      const e = await store.get(ADAPTER_ID);
      return held.includes(ADAPTER_ID) && e?.endpoints.length === 2;
    });
  });

  it('a new adapter is loaded only once its finalizer is on (issue 46 item 3: the loads are apply’s, after the finalizer), so a delete always finds it to unload', async () => {
    // A stand-in base engine that, asked to load, reads the adapter Model as the API server has it.
    const seen: (string[] | undefined)[] = [];
    const engine = createServer(async (req, res) => {
      if (req.url === '/v1/models') return res.end(JSON.stringify({ data: [{ id: BASE_ID }] }));
      if (req.url === '/v1/load_lora_adapter') {
        let body = '';
        for await (const chunk of req) body += chunk;
        // The other adapter (tone) is loaded here too, the stand-in being a new base pod.
        if (JSON.parse(body).lora_name === 'acme/llama-early')
          seen.push(
            await readModel(cluster, 'early').then(
              (m) => m.metadata.finalizers ?? [],
              () => ['(not found)'],
            ),
          );
        return res.end('loaded');
      }
      res.statusCode = 404;
      res.end();
    });
    await new Promise<void>((r) => engine.listen(0, '127.0.0.1', r));
    const { discovery } = apis(cluster);
    const fourth = readySlice('model-llama', (engine.address() as AddressInfo).port);
    fourth.metadata!.name = 'model-llama-test-4';
    try {
      await discovery.createNamespacedEndpointSlice({ namespace: 'default', body: fourth });
      await waitUntil(
        'the base catalogued on three engines',
        async () => (await store.get(BASE_ID.toLowerCase()))?.endpoints.length === 3,
      );
      await createAdapter('early', 'acme/llama-early');
      await waitUntil('a load asked of the stand-in', async () => seen.length > 0, 30_000);
      expect(seen[0]).toContain(FINALIZER);
      await apis(cluster).custom.deleteNamespacedCustomObject(modelRef('early'));
      await modelGone('early');
    } finally {
      await discovery
        .deleteNamespacedEndpointSlice({ name: 'model-llama-test-4', namespace: 'default' })
        .catch(() => {});
      await new Promise((r) => engine.close(r));
    }
  });

  it('deleting the adapter Model unloads it from every base engine before its finalizer comes off, removes its entry and leaves the base', async () => {
    await apis(cluster).custom.deleteNamespacedCustomObject(modelRef('tone'));
    await modelGone('tone');
    // Gone means the finalizer came off, which waits for the unloads: no engine lists it now.
    for (const s of sims) expect(await loadedAdapters(s.url)).toEqual([]);
    expect(await store.get(ADAPTER_ID)).toBeNull();
    expect(await store.get(BASE_ID.toLowerCase())).toBeTruthy();
    const res = await fetch(`${sims[0]!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: ADAPTER_ID, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
    });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
      `The model \`${ADAPTER_ID}\` does not exist.`,
    );
  });

  it('an engine that refuses the unload keeps the finalizer (the entry goes) until a retry succeeds', async () => {
    // A stand-in for a misbehaving engine: it lists the adapter and answers its unload 500 at first.
    let refuse = true;
    let unloads = 0;
    const engine = createServer((req, res) => {
      if (req.url === '/v1/models')
        return res.end(
          JSON.stringify({ data: [{ id: BASE_ID }, { id: 'acme/llama-held', parent: BASE_ID }] }),
        );
      if (req.url === '/v1/unload_lora_adapter') {
        unloads++;
        res.statusCode = refuse ? 500 : 200;
        return res.end(refuse ? 'engine busy' : 'removed');
      }
      res.statusCode = 404;
      res.end();
    });
    await new Promise<void>((r) => engine.listen(0, '127.0.0.1', r));
    const { discovery } = apis(cluster);
    const third = readySlice('model-llama', (engine.address() as AddressInfo).port);
    third.metadata!.name = 'model-llama-test-3';
    try {
      await discovery.createNamespacedEndpointSlice({ namespace: 'default', body: third });
      await createAdapter('held', 'acme/llama-held');
      await waitUntil(
        'held catalogued on three engines',
        async () => (await store.get('acme/llama-held'))?.endpoints.length === 3,
      );
      await apis(cluster).custom.deleteNamespacedCustomObject(modelRef('held'));
      await waitUntil('the unload refused twice (a retry)', async () => unloads >= 2, 30_000);
      const held = await readModel(cluster, 'held');
      expect(held.metadata.deletionTimestamp).toBeTruthy();
      expect(held.metadata.finalizers?.length).toBeGreaterThan(0);
      expect(await store.get('acme/llama-held')).toBeNull();
      for (const s of sims) expect(await loadedAdapters(s.url)).toEqual([]);
      refuse = false;
      await modelGone('held');
    } finally {
      await discovery
        .deleteNamespacedEndpointSlice({ name: 'model-llama-test-3', namespace: 'default' })
        .catch(() => {});
      await new Promise((r) => engine.close(r));
    }
  });

  it('a base deleted before its adapter: the adapter turns BaseMissing, and its own deletion then completes', async () => {
    await createAdapter('tone-two', 'acme/llama-tone-two');
    await adapterCondition('tone-two', 'Loaded');
    await apis(cluster).custom.deleteNamespacedCustomObject(modelRef('llama'));
    await adapterCondition('tone-two', 'BaseMissing');
    await apis(cluster).custom.deleteNamespacedCustomObject(modelRef('tone-two'));
    await waitUntil(
      'the adapter entry removed',
      async () => !(await store.get('acme/llama-tone-two')),
      30_000,
    );
    await modelGone('tone-two');
    expect(operator.runtime.leader.isLeader).toBe(true);
  });
});
