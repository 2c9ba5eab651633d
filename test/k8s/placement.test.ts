// Engine placement on a control plane whose scheduler is real (kube-apiserver, kube-controller-
// manager, kube-scheduler; kwok plays the kubelets, test/cluster/control-plane.ts). One plain node
// and one GPU node as managed pools have them: `nvidia.com/gpu` capacity, the product label and the
// `nvidia.com/gpu=present:NoSchedule` taint. An engine asking for a GPU without a profile stays
// Pending and its Model says why within seconds (issue 36 item 4); with the pool's profile it lands
// on the GPU node and is catalogued. The last test measures what operator/fleet/drain.ts sizes the
// preStop by: a deleted engine pod → its endpoint gone from the catalogue.
import { describe, expect, it } from 'vitest';
import { CatalogueStore } from '../../core/catalogue/store.ts';
import { chatModel } from '../../operator/fixtures.ts';
import { CATALOGUE_PROPAGATION_SECONDS } from '../../operator/fleet/drain.ts';
import { parseFleetConfig } from '../../operator/fleet/profiles.ts';
import type { Model } from '../../operator/model/model.ts';
import type { ControlPlane } from '../cluster/control-plane.ts';
import { apis, createModel, getTable, json, modelRef, readModel, waitUntil } from './helpers.ts';
import { kwokSuite } from './kwok-suite.ts';

let store: CatalogueStore;

const GPU_NODE = 'gpu-node-0';
const fleet = parseFleetConfig({
  resourceProfiles: {
    'nvidia-gpu-h100': {
      requests: { cpu: '2', memory: '8Gi' },
      limits: { 'nvidia.com/gpu': '1' },
      nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' },
      tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
    },
  },
  podDefaults: {},
});

interface Pod {
  metadata: { name: string; deletionTimestamp?: string };
  spec: { nodeName?: string; tolerations?: { key?: string }[] };
  status?: { podIP?: string; conditions?: { type: string; status: string }[] };
}

const podsOf = async (model: string) =>
  (
    await json<{ items: Pod[] }>(
      await cp.api('GET', `/api/v1/namespaces/default/pods?labelSelector=modelplane.dev/model%3D${model}`),
    )
  ).items;
const degraded = (m: Model) => m.status?.conditions?.find((c) => c.type === 'Degraded');

function gpuModel(name: string, engine: NonNullable<Model['spec']['engine']>): Model {
  const m = chatModel(name, { id: `acme/${name}`, engine });
  return m;
}

let cp: ControlPlane;
kwokSuite('placement', fleet, async (plane, redis) => {
  cp = plane;
  const capacity = {
    cpu: '64',
    memory: '512Gi',
    pods: '110',
    'ephemeral-storage': '1Ti',
    'nvidia.com/gpu': '8',
  };
  await json(
    await cp.api('POST', '/api/v1/nodes', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: GPU_NODE,
        annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
        labels: {
          'kubernetes.io/hostname': GPU_NODE,
          'kubernetes.io/os': 'linux',
          'kubernetes.io/arch': 'amd64',
          'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
          type: 'kwok',
        },
      },
      spec: { taints: [{ key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' }] },
      status: { allocatable: capacity, capacity },
    }),
  );
  store = new CatalogueStore(redis.client());
});

describe('engine placement on a real scheduler (kwok nodes)', () => {
  it("without a profile a GPU engine stays Pending on the tainted pool, and its Model says why with the scheduler's words within seconds", async () => {
    await createModel(cp, gpuModel('no-profile', { type: 'simulator', gpus: 1 }));
    const pending = await waitUntil(
      'an engine pod the scheduler refused',
      async () =>
        (await podsOf('no-profile')).find((p) =>
          p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False'),
        ),
      60_000,
    );
    const refusedAt = Date.now();
    expect(pending.spec.nodeName).toBeUndefined();
    const condition = await waitUntil(
      'Degraded=True Unschedulable on the Model',
      async () => {
        const d = degraded(await readModel(cp, 'no-profile'));
        return d?.status === 'True' ? d : undefined;
      },
      20_000,
    );
    // Seconds, not the Deployment's 10-minute progress deadline (a generous bound for a loaded machine).
    expect(Date.now() - refusedAt).toBeLessThan(20_000);
    expect(condition.reason).toBe('Unschedulable');
    expect(condition.message).toMatch(/untolerated taint \{nvidia\.com\/gpu: present\}/);
    expect(condition.message).toMatch(/Insufficient nvidia\.com\/gpu/);
    const table = await getTable(cp, '/apis/modelplane.dev/v1alpha1/namespaces/default/models/no-profile');
    const names = table.columnDefinitions.map((c) => c.name);
    expect(table.rows[0]?.cells[names.indexOf('Problem')]).toBe('Unschedulable');
  });

  it('with the pool’s profile the engine lands on the GPU node, becomes ready and is catalogued; kubectl get models shows the profile', async () => {
    await createModel(
      cp,
      gpuModel('h100', { type: 'simulator', resourceProfile: 'nvidia-gpu-h100:2', replicas: 2 }),
    );
    const pods = await waitUntil(
      'two engine pods running on the GPU node',
      async () => {
        const all = await podsOf('h100');
        return all.length === 2 && all.every((p) => p.spec.nodeName && p.status?.podIP) ? all : undefined;
      },
      60_000,
    );
    for (const p of pods) expect(p.spec.nodeName).toBe(GPU_NODE);
    const entry = await waitUntil(
      'catalogued with both endpoints',
      async () => {
        const e = await store.get('acme/h100');
        return e && e.endpoints.length === 2 ? e : undefined;
      },
      60_000,
    );
    expect(entry.endpoints.map((e) => e.url).sort()).toEqual(
      pods.map((p) => `http://${p.status?.podIP}:9000`).sort(),
    );
    const model = await waitUntil(
      'Ready with 2 available',
      async () => {
        const m = await readModel(cp, 'h100');
        return m.status?.readyReplicas === 2 ? m : undefined;
      },
      30_000,
    );
    expect(degraded(model)).toMatchObject({ status: 'False' });
    const table = await getTable(cp, '/apis/modelplane.dev/v1alpha1/namespaces/default/models/h100');
    const cells = Object.fromEntries(
      table.columnDefinitions.map((c, i) => [c.name, table.rows[0]?.cells[i]]),
    );
    expect(cells).toMatchObject({ Ready: 'True', Replicas: 2, Available: 2, Profile: 'nvidia-gpu-h100:2' });
  });

  it('kubectl rollout restart: the catalogue never lacks a ready endpoint and ends on the new pods only', async () => {
    // What `kubectl rollout restart deployment/<engine>` writes: a template annotation. The
    // Deployment controller then replaces the pods (kwok starts each after its start delay); the
    // operator follows the EndpointSlice, so the proxies always have a ready engine to pick.
    const before = new Set((await podsOf('h100')).map((p) => p.metadata.name));
    const deployment = (await store.get('acme/h100'))?.endpoints.length;
    expect(deployment).toBe(2);
    const name = await waitUntil(
      'the engine Deployment',
      async () => {
        const list = await json<{ items: { metadata: { name: string; labels?: Record<string, string> } }[] }>(
          await cp.api(
            'GET',
            '/apis/apps/v1/namespaces/default/deployments?labelSelector=modelplane.dev/model%3Dh100',
          ),
        );
        return list.items[0]?.metadata.name;
      },
      10_000,
    );
    await apis(cp).apps.patchNamespacedDeployment({
      name,
      namespace: 'default',
      body: [
        {
          op: 'add',
          path: '/spec/template/metadata/annotations',
          value: { 'kubectl.kubernetes.io/restartedAt': new Date().toISOString() },
        },
      ],
    });
    let fewest = Number.POSITIVE_INFINITY;
    const fresh = await waitUntil(
      'two new pods alone in the catalogue',
      async () => {
        const entry = await store.get('acme/h100');
        fewest = Math.min(fewest, entry?.endpoints.length ?? 0);
        const pods = (await podsOf('h100')).filter((p) => !p.metadata.deletionTimestamp);
        const renewed =
          pods.length === 2 && pods.every((p) => !before.has(p.metadata.name) && p.status?.podIP);
        const urls = new Set(pods.map((p) => `http://${p.status?.podIP}:9000`));
        return renewed && entry?.endpoints.length === 2 && entry.endpoints.every((e) => urls.has(e.url))
          ? pods
          : undefined;
      },
      90_000,
    );
    expect(fresh).toHaveLength(2);
    expect(fewest).toBeGreaterThanOrEqual(1);
  });

  it('a scale-down takes the engine out of the catalogue well within the preStop (what operator/fleet/drain.ts sizes it by)', async () => {
    // Measured from the Model's change, a longer chain than a rollout's (pod deletion onwards):
    // operator → Deployment → ReplicaSet deletes a pod → endpointslice terminating → operator →
    // catalogue write and change message. kwok removes the pod at once, so no new pod can reuse
    // the IP while we look (a scale-down makes no new pod at all).
    const started = Date.now();
    await apis(cp).custom.patchNamespacedCustomObjectScale({
      ...modelRef('h100'),
      body: [{ op: 'replace', path: '/spec/replicas', value: 1 }],
    });
    await waitUntil(
      'one endpoint left in the catalogue',
      async () => (await store.get('acme/h100'))?.endpoints.length === 1,
      CATALOGUE_PROPAGATION_SECONDS * 1000,
    );
    const took = Date.now() - started;
    process.stderr.write(`[placement] scale-down → endpoint out of the catalogue: ${took} ms\n`);
    expect(took).toBeLessThan(CATALOGUE_PROPAGATION_SECONDS * 1000);
  });
});
