// Weights once on a control plane whose controllers are real (kube-apiserver, kube-controller-
// manager with its Job, PV and garbage-collector controllers, kube-scheduler; kwok plays the
// kubelets, test/cluster/control-plane.ts). What is simulated: kwok runs no container, so a loader
// pod "succeeds" by kwok's pod stage, not by copying, and no volume is mounted — the copy itself is
// run for real in operator/weights/loader.test.ts. What is real: the claims bound by the PV
// controller, the Jobs and their completion as the Job controller records it, the operator's
// conditions, the Deployment held back and then mounting the cache read-only, the scheduler
// placing engine pods that use the claim, the eviction Job before the finalizer comes off.
import { describe, expect, it } from 'vitest';
import { chatModel } from '../../operator/fixtures.ts';
import { parseFleetConfig } from '../../operator/fleet/profiles.ts';
import type { Model } from '../../operator/model/model.ts';
import type { EngineSpec } from '../../operator/model/spec.ts';
import type { WeightsSpec } from '../../operator/model/weights.ts';
import type { ControlPlane } from '../cluster/control-plane.ts';
import { apis, createModel, getTable, json, modelRef, readModel, waitUntil } from './helpers.ts';
import { kwokSuite } from './kwok-suite.ts';

const fleet = parseFleetConfig({
  cacheProfiles: {
    shared: {
      sharedFilesystem: { storageClassName: 'kwok-rwx', size: '500Gi' },
      // Where its loader Jobs run: the API server takes the shapes, the scheduler honours them.
      loader: {
        nodeSelector: { 'kubernetes.io/os': 'linux' },
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'storage', effect: 'NoSchedule' }],
        limits: { memory: '4Gi' },
      },
    },
  },
  weightsLoader: { image: 'registry.example/modelplane/operator:test' },
});
// Issue 47.6/7: a profile whose loader no node matches (the claim exists and is bound), with
// deadlines short enough to watch them run out.
fleet.cacheProfiles.nowhere = {
  sharedFilesystem: { claimName: 'uploaded-weights', size: '1Ti' },
  loader: {
    nodeSelector: { 'storage.example/nfs': 'reachable' },
    loadDeadlineSeconds: 20,
    evictDeadlineSeconds: 20,
  },
};

interface Job {
  metadata: { name: string; ownerReferences?: { kind: string }[]; annotations?: Record<string, string> };
  spec: {
    activeDeadlineSeconds?: number;
    template: {
      spec: {
        nodeSelector?: Record<string, string>;
        tolerations?: { key?: string }[];
        containers: {
          args: string[];
          env?: { name: string; valueFrom?: unknown; value?: string }[];
          resources?: { limits?: Record<string, string> };
        }[];
        volumes: { name: string; persistentVolumeClaim?: { claimName: string; readOnly?: boolean } }[];
      };
    };
  };
  status?: { succeeded?: number; completionTime?: string; conditions?: { type: string; status: string }[] };
}
interface Pod {
  metadata: { name: string };
  spec: {
    nodeName?: string;
    containers: {
      args?: string[];
      env?: { name: string; value?: string; valueFrom?: unknown }[];
      envFrom?: unknown[];
      volumeMounts?: { name: string; readOnly?: boolean; mountPath: string }[];
    }[];
  };
  status?: { podIP?: string };
}

const post = (path: string, body: unknown) => cp.api('POST', path, body).then(json);
const jobsOf = async (model: string) =>
  (
    await json<{ items: Job[] }>(
      await cp.api(
        'GET',
        `/apis/batch/v1/namespaces/default/jobs?labelSelector=modelplane.dev/weights-of%3D${model}`,
      ),
    )
  ).items;
const podsOf = async (selector: string) =>
  (
    await json<{ items: Pod[] }>(
      await cp.api('GET', `/api/v1/namespaces/default/pods?labelSelector=${selector}`),
    )
  ).items;
const weightsCondition = (m: Model) => m.status?.conditions?.find((c) => c.type === 'WeightsCached');
const complete = (j: Job) => j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True');

function cachedModel(name: string, weights: WeightsSpec, engine: Partial<EngineSpec> = {}): Model {
  return chatModel(name, {
    id: `acme/${name}`,
    engine: { type: 'simulator', replicas: 1, weights, ...engine },
  });
}

/** A volume the PV controller binds a claim to (hostPath: nothing is mounted under kwok). */
const volume = (name: string, storageClassName: string, accessModes: string[]) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name },
  spec: {
    storageClassName,
    accessModes,
    capacity: { storage: '1Ti' },
    hostPath: { path: `/tmp/${name}` },
  },
});

let cp: ControlPlane;
kwokSuite('weights', fleet, async (plane) => {
  cp = plane;
  await post('/api/v1/persistentvolumes', volume('cache-rwx', 'kwok-rwx', ['ReadWriteMany']));
  await post('/api/v1/persistentvolumes', volume('uploaded', 'kwok-src', ['ReadWriteOnce']));
  await post('/api/v1/namespaces/default/persistentvolumeclaims', {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'uploaded-weights' },
    spec: {
      storageClassName: 'kwok-src',
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '100Gi' } },
    },
  });
  await post('/api/v1/namespaces/default/secrets', {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'object-store' },
    stringData: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'never-in-the-model' },
  });
  for (const [name, data] of [
    ['hub', { token: 'hf_never-in-the-model' }],
    ['engine-extras', { VLLM_API_KEY: 'never-in-the-model-either' }],
  ] as const) {
    await post('/api/v1/namespaces/default/secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name },
      stringData: data,
    });
  }
});

// Each step waits on several controllers in turn; bounds for a loaded 2-core machine.
const STEP = 180_000;

describe('weights load once (kwok control plane)', () => {
  it(
    'from a (simulated) object store: one loader Job, the engine held until it completes, then replicas that mount the cache read-only and load nothing',
    async () => {
      await createModel(
        cp,
        cachedModel(
          'from-s3',
          {
            source: {
              s3: {
                url: 's3://weights/llama-8b',
                endpoint: 'http://minio.storage:9000',
                credentialsSecret: { name: 'object-store' },
              },
            },
            cacheProfile: 'shared',
          },
          // A token the engine needs, held only in a Secret: the Model names it, never holds it.
          {
            env: [{ name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hub', key: 'token' } } }],
            envFrom: [{ secretRef: { name: 'engine-extras' } }],
          },
        ),
      );
      const [loader] = await waitUntil(
        'a loader Job',
        async () => {
          const jobs = await jobsOf('from-s3');
          return jobs.length ? jobs : undefined;
        },
        30_000,
      );
      expect(loader?.metadata.name).toBe('load-from-s3');
      expect(loader?.metadata.ownerReferences?.[0]?.kind).toBe('Model');
      const container = loader!.spec.template.spec.containers[0]!;
      expect(container.args.slice(0, 3)).toEqual(['load', '--from', 's3://weights/llama-8b']);
      // The profile's loader placement, as the API server stored it.
      expect(loader!.spec.template.spec.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux' });
      expect(loader!.spec.template.spec.tolerations?.[0]?.key).toBe('dedicated');
      expect(container.resources?.limits?.memory).toBe('4Gi');
      // The keys reach the loader by reference only.
      expect(JSON.stringify(loader)).not.toContain('never-in-the-model');
      expect(container.env?.find((e) => e.name === 'AWS_SECRET_ACCESS_KEY')?.valueFrom).toEqual({
        secretKeyRef: { name: 'object-store', key: 'secretAccessKey' },
      });
      // The profile's claim exists and the PV controller binds it.
      await waitUntil(
        'the cache claim bound',
        async () => {
          const c = await json<{ status?: { phase?: string } }>(
            await cp.api('GET', '/api/v1/namespaces/default/persistentvolumeclaims/models-cache-shared'),
          );
          return c.status?.phase === 'Bound';
        },
        30_000,
      );

      // kwok's pod stage "completes" the loader pod; the Job controller marks the Job Complete.
      await waitUntil(
        'the loader Job complete',
        async () => (await jobsOf('from-s3')).some(complete),
        60_000,
      );
      const cached = await waitUntil(
        'WeightsCached=True',
        async () => {
          const m = await readModel(cp, 'from-s3');
          return weightsCondition(m)?.status === 'True' ? m : undefined;
        },
        30_000,
      );
      expect(weightsCondition(cached)?.reason).toBe('Cached');

      // Then the engine: scaled to two, both on the cache read-only, still one load.
      await apis(cp).custom.patchNamespacedCustomObjectScale({
        ...modelRef('from-s3'),
        body: [{ op: 'replace', path: '/spec/replicas', value: 2 }],
      });
      const pods = await waitUntil(
        'two engine pods running',
        async () => {
          const all = await podsOf('modelplane.dev/model%3Dfrom-s3');
          return all.length === 2 && all.every((p) => p.spec.nodeName && p.status?.podIP) ? all : undefined;
        },
        60_000,
      );
      const uid = cached.metadata.uid;
      for (const p of pods) {
        expect(p.spec.containers[0]?.volumeMounts).toContainEqual(
          expect.objectContaining({ name: 'weights', readOnly: true, mountPath: `/models/from-s3-${uid}` }),
        );
      }
      // Held back: the Deployment was made no earlier than the Job completed (both in whole seconds).
      const deployment = await json<{ metadata: { creationTimestamp: string } }>(
        await cp.api('GET', '/apis/apps/v1/namespaces/default/deployments/model-from-s3'),
      );
      const done = (await jobsOf('from-s3'))[0]?.status?.completionTime;
      expect(Date.parse(deployment.metadata.creationTimestamp)).toBeGreaterThanOrEqual(
        Date.parse(done ?? ''),
      );
      // The Secret reaches the engine by reference only: the kubelet resolves it as the container
      // starts (kwok starts none, so that last step is Kubernetes' own, not run here).
      expect(JSON.stringify(pods)).not.toContain('never-in-the-model');
      expect(pods[0]?.spec.containers[0]?.envFrom).toEqual([{ secretRef: { name: 'engine-extras' } }]);
      expect(pods[0]?.spec.containers[0]?.env).toEqual(
        expect.arrayContaining([
          { name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hub', key: 'token' } } },
          { name: 'HF_HUB_OFFLINE', value: '1' },
          { name: 'MODELPLANE_WEIGHTS', value: `/models/from-s3-${uid}` },
        ]),
      );
      const jobs = await jobsOf('from-s3');
      expect(jobs.map((j) => j.metadata.name)).toEqual(['load-from-s3']);
      expect(jobs[0]?.status?.succeeded).toBe(1);
      expect(await podsOf('modelplane.dev/weights-of%3Dfrom-s3')).toHaveLength(1);
      const table = await getTable(cp, '/apis/modelplane.dev/v1alpha1/namespaces/default/models/from-s3');
      const cells = Object.fromEntries(
        table.columnDefinitions.map((c, i) => [c.name, table.rows[0]?.cells[i]]),
      );
      expect(cells).toMatchObject({ Weights: 'Cached' });
    },
    STEP,
  );

  it(
    'from a claim: the loader mounts it read-only and copies it onto the shared cache once',
    async () => {
      await createModel(
        cp,
        cachedModel('from-pvc', {
          source: { pvc: { claimName: 'uploaded-weights', path: 'llama-8b' } },
          cacheProfile: 'shared',
        }),
      );
      const job = await waitUntil(
        'a complete loader Job',
        async () => (await jobsOf('from-pvc')).find(complete),
        60_000,
      );
      expect(job.spec.template.spec.volumes).toContainEqual({
        name: 'weights-source',
        persistentVolumeClaim: { claimName: 'uploaded-weights', readOnly: true },
      });
      expect(job.spec.template.spec.containers[0]?.args.slice(0, 3)).toEqual([
        'load',
        '--from',
        'dir:/source',
      ]);
      await waitUntil(
        'engine pod running',
        async () => {
          const all = await podsOf('modelplane.dev/model%3Dfrom-pvc');
          return all.length === 1 && all[0]?.status?.podIP;
        },
        60_000,
      );
      // The status write follows the Deployment's in the same reconcile: it may land after the pod runs.
      await waitUntil(
        'WeightsCached=True Cached',
        async () => weightsCondition(await readModel(cp, 'from-pvc'))?.reason === 'Cached',
        30_000,
      );
    },
    STEP,
  );

  it(
    '47.6/47.7 a loader no node matches: Degraded with the scheduler’s words at once, LoadFailed at the deadline; then delete, and the evictor that never starts lets the Model go',
    async () => {
      await createModel(
        cp,
        cachedModel('stranded', {
          source: { huggingFace: { repo: 'meta-llama/Llama-3.1-8B' } },
          cacheProfile: 'nowhere',
        }),
      );
      const degraded = (m: Model) => m.status?.conditions?.find((c) => c.type === 'Degraded');
      const seen = await waitUntil(
        'Degraded=True LoaderUnschedulable',
        async () => {
          const m = await readModel(cp, 'stranded');
          return degraded(m)?.reason === 'LoaderUnschedulable' ? m : undefined;
        },
        30_000,
      );
      // The real scheduler's message, on both conditions.
      expect(degraded(seen)?.status).toBe('True');
      expect(degraded(seen)?.message).toMatch(/didn't match Pod's node affinity\/selector/);
      expect(weightsCondition(seen)).toMatchObject({ status: 'False', reason: 'LoaderUnschedulable' });
      const [loader] = await jobsOf('stranded');
      expect(loader?.spec.activeDeadlineSeconds).toBe(20);
      // The Job controller fails the Job at its deadline; the Model says so.
      const failed = await waitUntil(
        'WeightsCached=False LoadFailed',
        async () => {
          const m = await readModel(cp, 'stranded');
          return weightsCondition(m)?.reason === 'LoadFailed' ? m : undefined;
        },
        60_000,
      );
      expect(weightsCondition(failed)?.message).toMatch(/deadline/);
      expect(degraded(failed)).toMatchObject({ status: 'True', reason: 'LoadFailed' });
      expect(await podsOf('modelplane.dev/model%3Dstranded')).toEqual([]); // no engine ever made

      // Delete: the evictor inherits the placement and is never scheduled; the Model still goes.
      await apis(cp).custom.deleteNamespacedCustomObject(modelRef('stranded'));
      await waitUntil(
        'the Model gone',
        async () => {
          const r = await cp.api('GET', '/apis/modelplane.dev/v1alpha1/namespaces/default/models/stranded');
          return r.status === 404;
        },
        30_000,
      );
      const evictor = (await jobsOf('stranded')).find((j) => j.metadata.name === 'evict-stranded');
      expect(evictor?.spec.activeDeadlineSeconds).toBe(20);
      // Left to the Job controller, it ends by its deadline instead of pending for good.
      await waitUntil(
        'the evictor failed at its deadline',
        async () =>
          (await jobsOf('stranded'))
            .find((j) => j.metadata.name === 'evict-stranded')
            ?.status?.conditions?.some((c) => c.type === 'Failed' && c.status === 'True'),
        60_000,
      );
    },
    STEP,
  );

  it(
    'delete: an evictor Job removes the folder before the finalizer comes off',
    async () => {
      const uid = (await readModel(cp, 'from-s3')).metadata.uid;
      await apis(cp).custom.deleteNamespacedCustomObject(modelRef('from-s3'));
      const evictor = await waitUntil(
        'an evictor Job',
        async () => (await jobsOf('from-s3')).find((j) => j.metadata.name === 'evict-from-s3'),
        30_000,
      );
      expect(evictor.spec.template.spec.containers[0]?.args).toEqual([
        'evict',
        '--dir',
        `/cache/models/from-s3-${uid}`,
      ]);
      expect(evictor.metadata.ownerReferences).toBeUndefined();
      await waitUntil(
        'the Model gone',
        async () => {
          const r = await cp.api('GET', '/apis/modelplane.dev/v1alpha1/namespaces/default/models/from-s3');
          return r.status === 404;
        },
        60_000,
      );
      const after = await jobsOf('from-s3');
      expect(after.find((j) => j.metadata.name === 'evict-from-s3')?.status?.succeeded).toBe(1);
      expect(after.find((j) => j.metadata.name === 'load-from-s3')).toBeUndefined();
    },
    STEP,
  );
});
