import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { chatModel } from '../fixtures.ts';
import { parseFleetConfig } from '../fleet/profiles.ts';
import type { Model } from '../model/model.ts';
import type { WeightsSpec } from '../model/weights.ts';
import { planModel } from '../reconcile/plan.ts';
import { UID_ANNOTATION } from './objects.ts';
import { planWeights } from './plan.ts';

const fleet = parseFleetConfig({
  cacheProfiles: {
    nfs: { sharedFilesystem: { storageClassName: 'nfs-csi', size: '2Ti' } },
    filestore: { sharedFilesystem: { claimName: 'weights-rwx' } },
  },
  weightsLoader: { image: 'registry.example/modelplane/operator:1.2.3' },
});
const s3: WeightsSpec['source'] = {
  s3: {
    url: 's3://weights/llama-8b',
    endpoint: 'http://minio:9000',
    credentialsSecret: { name: 'minio-creds' },
  },
};

function model(weights: WeightsSpec, extra: Partial<Model['metadata']> = {}): Model {
  const m = chatModel('llama', { engine: { type: 'vllm', weights } });
  m.metadata = {
    ...m.metadata,
    uid: 'u-1',
    generation: 1,
    finalizers: ['modelplane.dev/catalogue'],
    ...extra,
  };
  return m;
}
const job = (condition?: string, uid = 'u-1', message = 'BackoffLimitExceeded'): V1Job => ({
  metadata: { name: 'x', annotations: { [UID_ANNOTATION]: uid } },
  status: condition ? { conditions: [{ type: condition, status: 'True', message }] } : {},
});
const none = { loadJob: null, evictJob: null };
/** A Job's pod as the scheduler left it: refused (with its words) or placed. */
const jobPod = (name: string, refused?: string): V1Pod => ({
  metadata: { name, labels: { 'batch.kubernetes.io/job-name': name.replace(/-[a-z0-9]+$/, '') } },
  status: refused
    ? {
        phase: 'Pending',
        conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: refused }],
      }
    : { phase: 'Running', conditions: [{ type: 'PodScheduled', status: 'True' }] },
});
const noNode = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.";
const now = '2026-01-01T00:00:00Z';

describe('weights once: the pure plan', () => {
  it("a profile's loader placement: its Jobs run where the admin says, with the resources given over the defaults", () => {
    const placed = parseFleetConfig({
      cacheProfiles: {
        nfs: {
          sharedFilesystem: { storageClassName: 'nfs-csi' },
          loader: {
            nodeSelector: { 'storage.example/nfs': 'reachable' },
            tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'storage', effect: 'NoSchedule' }],
            priorityClassName: 'batch-low',
            requests: { cpu: '2' },
            limits: { memory: '8Gi' },
          },
        },
      },
    });
    const pod = planWeights(model({ source: s3, cacheProfile: 'nfs' }), placed, none).jobs[0]!.spec!.template
      .spec!;
    expect(pod.nodeSelector).toEqual({ 'storage.example/nfs': 'reachable' });
    expect(pod.tolerations).toEqual([
      { key: 'dedicated', operator: 'Equal', value: 'storage', effect: 'NoSchedule' },
    ]);
    expect(pod.priorityClassName).toBe('batch-low');
    expect(pod.containers[0]!.resources).toEqual({
      requests: { cpu: '2', memory: '512Mi' },
      limits: { memory: '8Gi' },
    });
    // Without one, the scheduler picks any node.
    const anywhere = planWeights(model({ source: s3, cacheProfile: 'nfs' }), fleet, none).jobs[0]!.spec!
      .template.spec!;
    expect(anywhere.nodeSelector).toBeUndefined();
    expect(anywhere.tolerations).toBeUndefined();
  });

  it('a cache profile: the claim (RWX, its storage class), one loader Job writing models/<name>-<uid>, the engine held back, WeightsCached Loading', () => {
    const p = planWeights(model({ source: s3, cacheProfile: 'nfs' }), fleet, none);
    expect(p.claim?.metadata?.name).toBe('models-cache-nfs');
    expect(p.claim?.spec).toMatchObject({
      accessModes: ['ReadWriteMany'],
      storageClassName: 'nfs-csi',
      resources: { requests: { storage: '2Ti' } },
    });
    expect(p.jobs).toHaveLength(1);
    const loader = p.jobs[0]!;
    expect(loader.metadata?.name).toBe('load-llama');
    expect(loader.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Model', uid: 'u-1' });
    const c = loader.spec!.template.spec!.containers[0]!;
    expect(c.image).toBe('registry.example/modelplane/operator:1.2.3');
    expect(c.args).toEqual([
      'load',
      '--from',
      's3://weights/llama-8b',
      '--to',
      '/cache/models/llama-u-1',
      '--endpoint',
      'http://minio:9000',
    ]);
    // Credentials only by reference.
    expect(c.env).toEqual([
      { name: 'AWS_ACCESS_KEY_ID', valueFrom: { secretKeyRef: { name: 'minio-creds', key: 'accessKeyId' } } },
      {
        name: 'AWS_SECRET_ACCESS_KEY',
        valueFrom: { secretKeyRef: { name: 'minio-creds', key: 'secretAccessKey' } },
      },
    ]);
    // Not labelled as an engine pod (the pods informer would count it against placement).
    expect(loader.spec?.template.metadata?.labels?.['modelplane.dev/model']).toBeUndefined();
    expect(p.hold).toBe(true);
    expect(p.condition).toMatchObject({ type: 'WeightsCached', status: 'False', reason: 'Loading' });
  });

  it('the Job complete: Cached, no new Job, the engine mounts only its folder read-only and is pointed at it', () => {
    const p = planWeights(model({ source: s3, cacheProfile: 'filestore' }), fleet, {
      loadJob: job('Complete'),
      evictJob: null,
    });
    expect(p.claim).toBeNull(); // the admin's own claim
    expect(p.jobs).toEqual([]);
    expect(p.hold).toBe(false);
    expect(p.condition).toMatchObject({ status: 'True', reason: 'Cached' });
    expect(p.engine).toMatchObject({
      ref: '/models/llama-u-1',
      local: true,
      volumes: [{ name: 'weights', persistentVolumeClaim: { claimName: 'weights-rwx', readOnly: true } }],
      mounts: [{ mountPath: '/models/llama-u-1', subPath: 'models/llama-u-1', readOnly: true }],
    });
  });

  it('the whole Model: held while loading (no Deployment), then a Deployment whose vLLM opens the cached folder offline', () => {
    const m = model({ source: { huggingFace: { repo: 'meta-llama/Llama-3.1-8B' } }, cacheProfile: 'nfs' });
    const observed = { deployment: null, serviceExists: false, endpointSlices: [], now };
    const loading = planModel(m, { ...observed, weights: { loadJob: job(), evictJob: null } }, fleet);
    expect(loading.deployment).toBeNull();
    expect(loading.status?.conditions?.find((c) => c.type === 'WeightsCached')?.reason).toBe('Loading');
    const cached = planModel(
      m,
      { ...observed, weights: { loadJob: job('Complete'), evictJob: null } },
      fleet,
    );
    const pod = cached.deployment?.spec?.template.spec;
    const engine = pod!.containers[0]!;
    expect(engine.args?.slice(0, 2)).toEqual(['--model', '/models/llama-u-1']);
    expect(engine.env).toEqual(expect.arrayContaining([{ name: 'HF_HUB_OFFLINE', value: '1' }]));
    expect(engine.volumeMounts).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'weights', readOnly: true })]),
    );
    expect(pod?.volumes?.map((v) => v.name)).toContain('weights');
  });

  it('a failed loader Job: LoadFailed with the Job’s words, engines held, nothing re-created until the Job is deleted', () => {
    const p = planWeights(model({ source: s3, cacheProfile: 'nfs' }), fleet, {
      loadJob: job('Failed', 'u-1', 'Job has reached the specified backoff limit'),
      evictJob: null,
    });
    expect(p.jobs).toEqual([]);
    expect(p.hold).toBe(true);
    expect(p.condition?.reason).toBe('LoadFailed');
    expect(p.condition?.message).toMatch(/backoff limit.*delete the Job to retry/);
  });

  it('an unknown cache profile: said on the Model, no Job, no engine', () => {
    const p = planWeights(model({ source: s3, cacheProfile: 'nope' }), fleet, none);
    expect(p).toMatchObject({ jobs: [], hold: true, condition: { reason: 'UnknownCacheProfile' } });
    expect(p.condition?.message).toMatch(/nope is not defined .*has nfs, filestore/);
  });

  it('a Job left by an earlier Model of the same name is deleted, not taken for this one’s', () => {
    const p = planWeights(model({ source: s3, cacheProfile: 'nfs' }), fleet, {
      loadJob: job('Complete', 'u-0'),
      evictJob: null,
    });
    expect(p).toMatchObject({ removeJobs: ['x'], jobs: [], hold: true });
  });

  it('47.6 every Job has a deadline (activeDeadlineSeconds), 6 h to load and 10 min to evict unless the profile says', () => {
    const loader = planWeights(model({ source: s3, cacheProfile: 'nfs' }), fleet, none).jobs[0]!;
    expect(loader.spec?.activeDeadlineSeconds).toBe(21_600);
    const deleting = model({ source: s3, cacheProfile: 'nfs' }, { deletionTimestamp: now });
    expect(planWeights(deleting, fleet, none).jobs[0]!.spec?.activeDeadlineSeconds).toBe(600);
    const quick = parseFleetConfig({
      cacheProfiles: {
        nfs: {
          sharedFilesystem: { storageClassName: 'nfs-csi' },
          loader: { loadDeadlineSeconds: 3600, evictDeadlineSeconds: 120 },
        },
      },
    });
    expect(planWeights(model({ source: s3, cacheProfile: 'nfs' }), quick, none).jobs[0]!.spec).toMatchObject({
      activeDeadlineSeconds: 3600,
    });
    expect(planWeights(deleting, quick, none).jobs[0]!.spec?.activeDeadlineSeconds).toBe(120);
    expect(() =>
      parseFleetConfig({
        cacheProfiles: { nfs: { sharedFilesystem: { claimName: 'x' }, loader: { loadDeadlineSeconds: 0 } } },
      }),
    ).toThrow(/loadDeadlineSeconds/);
  });

  it('47.6 a loader pod the scheduler refuses: WeightsCached=False LoaderUnschedulable and Degraded=True, both with the scheduler’s words, not Loading forever', () => {
    const m = model({ source: s3, cacheProfile: 'nfs' });
    const observed = { deployment: null, serviceExists: false, endpointSlices: [], now };
    const placed = planModel(
      m,
      { ...observed, weights: { loadJob: job(), evictJob: null, loadPods: [jobPod('load-llama-abcde')] } },
      fleet,
    );
    expect(placed.status?.conditions?.find((c) => c.type === 'WeightsCached')?.reason).toBe('Loading');
    expect(placed.status?.conditions?.find((c) => c.type === 'Degraded')?.status).toBe('False');

    const stuck = planModel(
      m,
      {
        ...observed,
        weights: { loadJob: job(), evictJob: null, loadPods: [jobPod('load-llama-abcde', noNode)] },
      },
      fleet,
    );
    expect(stuck.deployment).toBeNull(); // still held back
    const weights = stuck.status?.conditions?.find((c) => c.type === 'WeightsCached');
    expect(weights).toMatchObject({ status: 'False', reason: 'LoaderUnschedulable' });
    expect(weights?.message).toContain(noNode);
    expect(weights?.message).toMatch(/load-llama-abcde.*fails after 21600 s/);
    const degraded = stuck.status?.conditions?.find((c) => c.type === 'Degraded');
    expect(degraded).toMatchObject({ status: 'True', reason: 'LoaderUnschedulable' });
    expect(degraded?.message).toContain(noNode);
  });

  it('47.6 a loader Job failed at its deadline: LoadFailed with the Job controller’s words, and Degraded', () => {
    const p = planModel(
      model({ source: s3, cacheProfile: 'nfs' }),
      {
        deployment: null,
        serviceExists: false,
        endpointSlices: [],
        now,
        weights: {
          loadJob: job('Failed', 'u-1', 'Job was active longer than specified deadline'),
          evictJob: null,
        },
      },
      fleet,
    );
    const degraded = p.status?.conditions?.find((c) => c.type === 'Degraded');
    expect(degraded).toMatchObject({ status: 'True', reason: 'LoadFailed' });
    expect(degraded?.message).toMatch(/longer than specified deadline; delete the Job to retry/);
  });

  it('47.7 deletion with an evictor the scheduler refuses: the Model goes as after a failed eviction, the Job left to run or end at its deadline', () => {
    const deleting = model({ source: s3, cacheProfile: 'nfs' }, { deletionTimestamp: now });
    const observed = { deployment: null, serviceExists: false, endpointSlices: [], now };
    const waiting = planModel(
      deleting,
      { ...observed, weights: { loadJob: null, evictJob: job(), evictPods: [jobPod('evict-llama-x1')] } },
      fleet,
    );
    expect(waiting.finalizer).toBe('none'); // placed: it runs, the finalizer waits for it
    const refused = planModel(
      deleting,
      {
        ...observed,
        weights: { loadJob: null, evictJob: job(), evictPods: [jobPod('evict-llama-x1', noNode)] },
      },
      fleet,
    );
    expect(refused.finalizer).toBe('remove');
    expect(refused.weights.removeJobs).toEqual([]);
    expect(refused.reasons.join('\n')).toMatch(/eviction cannot start .*didn't match.*the Model goes/);
  });

  it('deletion: the loader Job first, then an evictor Job; the finalizer waits for it, and comes off when it ends (even failed)', () => {
    const deleting = model({ source: s3, cacheProfile: 'nfs' }, { deletionTimestamp: now });
    const observed = { deployment: null, serviceExists: false, endpointSlices: [], now };
    const first = planModel(
      deleting,
      { ...observed, weights: { loadJob: job('Complete'), evictJob: null } },
      fleet,
    );
    expect(first.weights.removeJobs).toEqual(['load-llama']);
    expect(first.finalizer).toBe('none');
    expect(first.catalogue.action).toBe('remove');
    const second = planModel(deleting, { ...observed, weights: none }, fleet);
    const evictor = second.weights.jobs[0]!;
    expect(evictor.metadata?.name).toBe('evict-llama');
    expect(evictor.metadata?.ownerReferences).toBeUndefined();
    expect(evictor.spec?.ttlSecondsAfterFinished).toBeGreaterThan(0);
    expect(evictor.spec?.template.spec?.containers[0]?.args).toEqual([
      'evict',
      '--dir',
      '/cache/models/llama-u-1',
    ]);
    expect(second.finalizer).toBe('none');
    for (const end of ['Complete', 'Failed']) {
      const done = planModel(
        deleting,
        { ...observed, weights: { loadJob: null, evictJob: job(end) } },
        fleet,
      );
      expect(done.finalizer).toBe('remove');
      expect(done.weights.jobs).toEqual([]);
    }
  });

  it('no cache profile: a claim mounted read-only in place, or a repo the engine downloads at its revision with the token by reference', () => {
    const claim = planWeights(
      model({ source: { pvc: { claimName: 'weights', path: 'llama/8b' } }, file: 'model.gguf' }),
      fleet,
      none,
    );
    expect(claim).toMatchObject({ jobs: [], hold: false, condition: null });
    expect(claim.engine).toMatchObject({
      ref: '/weights/model.gguf',
      local: true,
      mounts: [{ mountPath: '/weights', subPath: 'llama/8b', readOnly: true }],
    });
    const m = model({
      source: {
        huggingFace: {
          repo: 'meta-llama/Llama-3.1-8B',
          revision: 'v2',
          tokenSecret: { name: 'hf', key: 'token' },
        },
      },
    });
    const plan = planModel(m, { deployment: null, serviceExists: false, endpointSlices: [], now }, fleet);
    const engine = plan.deployment!.spec!.template.spec!.containers[0]!;
    expect(engine.args).toEqual(
      expect.arrayContaining(['--model', 'meta-llama/Llama-3.1-8B', '--revision', 'v2']),
    );
    expect(engine.env).toEqual(
      expect.arrayContaining([
        { name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } },
      ]),
    );
    expect(JSON.stringify(plan.status?.conditions)).not.toMatch(/WeightsCached/);
  });

  it('llama.cpp opens a cached GGUF file with --model, not --hf-repo', () => {
    const m = chatModel('tiny', {
      engine: { type: 'llamacpp', weights: { source: s3, cacheProfile: 'nfs', file: 'tiny.gguf' } },
    });
    m.metadata.uid = 'u-2';
    const plan = planModel(
      m,
      {
        deployment: null,
        serviceExists: false,
        endpointSlices: [],
        now,
        weights: { loadJob: job('Complete', 'u-2'), evictJob: null },
      },
      fleet,
    );
    const args = plan.deployment?.spec?.template.spec?.containers[0]?.args ?? [];
    expect(args.slice(0, 2)).toEqual(['--model', '/models/tiny-u-2/tiny.gguf']);
    expect(args).not.toContain('--hf-repo');
  });
});
