// Placement with no cluster: a profile and a count in, the engine pod's scheduling and resources
// out; the drain timings every Deployment carries; an unschedulable pod or an unknown profile as
// the Model's Degraded condition.
import { readFileSync } from 'node:fs';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { acceptedEngines, engineDrain } from '../engines/index.ts';
import { chatModel } from '../fixtures.ts';
import { FINALIZER, type Model, parseModel } from '../model/model.ts';
import { planModel } from '../reconcile/plan.ts';
import { CATALOGUE_PROPAGATION_SECONDS } from './drain.ts';
import { multiplyQuantity, placementFor } from './placement.ts';
import { type FleetConfig, parseFleetConfig } from './profiles.ts';

const gpuTaint = { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' };
const fleet: FleetConfig = parseFleetConfig({
  resourceProfiles: {
    'nvidia-gpu-h100': {
      requests: { cpu: 8, memory: '64Gi' },
      limits: { 'nvidia.com/gpu': 1, memory: '80Gi' },
      nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' },
      tolerations: [gpuTaint],
      runtimeClassName: 'nvidia',
      priorityClassName: 'inference',
    },
  },
  podDefaults: {
    serviceAccountName: 'engines',
    imagePullSecrets: [{ name: 'registry' }],
    securityContext: { runAsNonRoot: true },
  },
});

function model(engine: NonNullable<Model['spec']['engine']>): Model {
  const m = chatModel('llama', { engine });
  m.metadata = { ...m.metadata, uid: 'u', generation: 1, finalizers: [FINALIZER] };
  return m;
}

const observed = { deployment: null, serviceExists: false, endpointSlices: [], now: '2026-01-01T00:00:00Z' };

describe('placement (operator/fleet/placement.ts)', () => {
  it.each([
    ['16Gi', 2, '32Gi'],
    ['500m', 3, '1500m'],
    ['1', 8, '8'],
    ['0.5', 3, '1.5'],
  ])('%s × %i = %s', (q, n, out) => expect(multiplyQuantity(q, n)).toBe(out));

  it('a profile with a count: every quantity times the count, GPUs for tensor parallelism, the pod placed as the profile says', () => {
    const d = planModel(
      model({
        type: 'vllm',
        resourceProfile: 'nvidia-gpu-h100:2',
        resources: { limits: { memory: '200Gi' } },
      }),
      observed,
      fleet,
    ).deployment;
    const pod = d?.spec?.template.spec;
    const engine = pod?.containers[0];
    expect(engine?.resources).toEqual({
      requests: { cpu: '16', memory: '128Gi' },
      // The Model's own limit wins over the profile's per key.
      limits: { 'nvidia.com/gpu': '2', memory: '200Gi' },
    });
    expect(engine?.args).toEqual(expect.arrayContaining(['--tensor-parallel-size', '2']));
    expect(pod).toMatchObject({
      nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' },
      tolerations: [gpuTaint],
      runtimeClassName: 'nvidia',
      priorityClassName: 'inference',
      serviceAccountName: 'engines',
      imagePullSecrets: [{ name: 'registry' }],
      securityContext: { runAsNonRoot: true },
    });
  });

  it("the Model's scheduling override adds node labels and tolerations and replaces the priority class", () => {
    const result = placementFor(
      {
        type: 'vllm',
        resourceProfile: 'nvidia-gpu-h100',
        scheduling: {
          nodeSelector: { zone: 'a' },
          tolerations: [{ key: 'spot', operator: 'Exists' }],
          priorityClassName: 'batch',
        },
      },
      fleet,
    );
    expect(result.ok && result.placement.pod).toMatchObject({
      nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3', zone: 'a' },
      tolerations: [gpuTaint, { key: 'spot', operator: 'Exists' }],
      priorityClassName: 'batch',
    });
  });

  it('without a profile: engine.gpus as nvidia.com/gpu limits, no node selector or tolerations, the pod defaults still apply', () => {
    const pod = planModel(model({ type: 'vllm', gpus: 1 }), observed, fleet).deployment?.spec?.template.spec;
    expect(pod?.containers[0]?.resources).toEqual({ limits: { 'nvidia.com/gpu': '1' } });
    expect(pod?.nodeSelector).toBeUndefined();
    expect(pod?.tolerations).toBeUndefined();
    expect(pod?.serviceAccountName).toBe('engines');
  });

  it('an unknown profile: no Deployment applied, Degraded=True UnknownResourceProfile naming the profiles there are', () => {
    const plan = planModel(model({ type: 'vllm', resourceProfile: 'nvidia-gpu-b200:8' }), observed, fleet);
    expect(plan.deployment).toBeNull();
    expect(plan.remove).toEqual([]);
    expect(plan.status?.conditions?.find((c) => c.type === 'Degraded')).toMatchObject({
      status: 'True',
      reason: 'UnknownResourceProfile',
      message: expect.stringContaining('nvidia-gpu-h100'),
    });
  });

  it("an engine pod the scheduler cannot place: Degraded=True with the scheduler's reason and message, at once", () => {
    const message = '0/2 nodes are available: 2 node(s) had untolerated taint {nvidia.com/gpu: present}.';
    const pending = (name: string): V1Pod => ({
      metadata: { name, labels: { 'modelplane.dev/model': 'llama' } },
      status: {
        phase: 'Pending',
        conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message }],
      },
    });
    const plan = planModel(model({ type: 'vllm', gpus: 1 }), {
      ...observed,
      pods: [pending('model-llama-b'), pending('model-llama-a')],
    });
    expect(plan.status?.conditions?.find((c) => c.type === 'Degraded')).toMatchObject({
      status: 'True',
      reason: 'Unschedulable',
      message: `2 engine pod(s) not scheduled; pod model-llama-a: ${message}`,
    });
    // A pod being deleted is not a problem any more.
    const leaving = { ...pending('model-llama-a'), metadata: { name: 'x', deletionTimestamp: new Date() } };
    const calm = planModel(model({ type: 'vllm', gpus: 1 }), { ...observed, pods: [leaving] });
    expect(calm.status?.conditions?.find((c) => c.type === 'Degraded')?.status).toBe('False');
  });

  it('a bad fleet file names the field', () => {
    expect(() => parseFleetConfig({ resourceProfiles: { h100: { requests: { cpu: 'lots' } } } })).toThrow(
      /resourceProfiles\.h100\.requests\.cpu/,
    );
  });
});

describe('drain (operator/fleet/drain.ts)', () => {
  it.each([
    // type, drainSeconds, preStop, engine flag, grace
    ['vllm', undefined, CATALOGUE_PROPAGATION_SECONDS, ['--shutdown-timeout', '40'], 50],
    ['simulator', 10, CATALOGUE_PROPAGATION_SECONDS, ['--shutdown-timeout', '10'], 20],
    ['sglang', 30, CATALOGUE_PROPAGATION_SECONDS + 30, [], 40],
    ['llamacpp', undefined, CATALOGUE_PROPAGATION_SECONDS + 40, [], 50],
  ] as const)(
    '%s with drainSeconds %s: preStop %i s, flags %j, grace %i s',
    (type, drainSeconds, preStop, flags, grace) => {
      const plan = engineDrain({ type, ...(drainSeconds === undefined ? {} : { drainSeconds }) });
      expect(plan).toEqual({
        preStopSeconds: preStop,
        engineArgs: [...flags],
        terminationGracePeriodSeconds: grace,
      });
      expect(grace).toBeGreaterThanOrEqual(preStop + (flags.length ? Number(flags[1]) : 0));
    },
  );

  it('the Deployment carries the preStop sleep, the grace, and the Model’s rollout bounds', () => {
    const d = planModel(
      model({ type: 'vllm', gpus: 1, drainSeconds: 120, rollout: { maxSurge: 1, maxUnavailable: 0 } }),
      observed,
    ).deployment;
    expect(d?.spec?.strategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
    });
    expect(d?.spec?.template.spec?.terminationGracePeriodSeconds).toBe(CATALOGUE_PROPAGATION_SECONDS + 125);
    expect(d?.spec?.template.spec?.containers[0]?.lifecycle).toEqual({
      preStop: { sleep: { seconds: CATALOGUE_PROPAGATION_SECONDS } },
    });
    expect(d?.spec?.template.spec?.containers[0]?.args?.slice(-2)).toEqual(['--shutdown-timeout', '120']);
  });
});

describe('scratch volume (operator/fleet/scratch.ts)', () => {
  it('a downloading engine writes its weights into a size-limited emptyDir, its caches pointed there; the Model may resize it or move a cache', () => {
    const pod = planModel(
      model({ type: 'vllm', gpus: 1, scratchSize: '400Gi', env: [{ name: 'HF_HOME', value: '/models' }] }),
      observed,
    ).deployment?.spec?.template.spec;
    expect(pod?.volumes).toContainEqual({ name: 'scratch', emptyDir: { sizeLimit: '400Gi' } });
    const engine = pod?.containers[0];
    expect(engine?.volumeMounts).toContainEqual({ name: 'scratch', mountPath: '/scratch' });
    expect(engine?.env?.filter((e) => e.name === 'HF_HOME')).toEqual([{ name: 'HF_HOME', value: '/models' }]);
    expect(engine?.env).toContainEqual({ name: 'HUGGINGFACE_HUB_CACHE', value: '/scratch/hf/hub' });
    const tei = planModel(model({ type: 'tei' }), observed).deployment?.spec?.template.spec;
    expect(tei?.volumes).toEqual([{ name: 'scratch', emptyDir: { sizeLimit: '200Gi' } }]);
    // The simulator downloads nothing.
    expect(
      planModel(model({ type: 'simulator' }), observed).deployment?.spec?.template.spec?.volumes,
    ).toBeUndefined();
  });
});

describe('the first example Model of docs/install.md (47.10)', () => {
  it('47.10 examples/models/cluster/vllm-llama-3.1-8b.yaml lands on a tainted GPU pool with the chart’s default profiles', () => {
    const read = (path: string) => parse(readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8'));
    const parsed = parseModel(read('examples/models/cluster/vllm-llama-3.1-8b.yaml'), acceptedEngines());
    if (!parsed.ok) throw new Error(parsed.problems.join('; '));
    const chart = read('charts/modelplane/values.yaml') as { engines: { resourceProfiles: unknown } };
    const defaults = parseFleetConfig({ resourceProfiles: chart.engines.resourceProfiles });
    const plan = planModel(
      parsed.model,
      { deployment: null, serviceExists: false, endpointSlices: [], now: '2026-01-01T00:00:00Z' },
      defaults,
    );
    const pod = plan.deployment?.spec?.template.spec;
    // GPU pools carry the nvidia.com/gpu=present:NoSchedule taint (docs/models.md "Placement").
    expect(pod?.tolerations).toContainEqual(gpuTaint);
    expect(pod?.containers[0]?.resources?.limits?.['nvidia.com/gpu']).toBe('1');
    expect(pod?.nodeSelector?.['nvidia.com/gpu.product']).toBeDefined();
  });
});
