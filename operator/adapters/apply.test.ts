import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../engines/simulator/server.ts';
import { chatModel } from '../fixtures.ts';
import { FINALIZER } from '../model/model.ts';
import { planModel } from '../reconcile/plan.ts';
import { applyAdapterStep, applyLoads, applyUnloads, loadedAdapters, observeBasePods } from './apply.ts';
import { type BasePod, planAdapter } from './plan.ts';
import { planAdapterStep } from './reconcile.ts';
import { planAdapterRemoval } from './removal.ts';

let a: Simulator;
let b: Simulator;
beforeAll(async () => {
  a = await startSimulator({ models: ['llama'] });
  b = await startSimulator({ models: ['llama'] });
});
afterAll(async () => {
  await a.close();
  await b.close();
});

const spec = { base: 'llama', source: '/adapters/tone' };
const observe = async (sims: Simulator[]): Promise<BasePod[]> =>
  Promise.all(
    sims.map(async (s, i) => ({
      name: `pod-${i}`,
      url: s.url,
      ready: true,
      terminating: false,
      loaded: await loadedAdapters(s.url),
    })),
  );

describe('adapter apply against the simulator', () => {
  it('loads on every base pod, after which the plan reports it held everywhere and loads nothing', async () => {
    const first = planAdapter('tone', spec, {
      exists: true,
      runtimeLoading: true,
      pods: await observe([a, b]),
    });
    expect(first.load).toHaveLength(2);
    expect(await applyLoads(first.load)).toEqual(new Map());
    expect(a.adapters().get('tone')).toBe('/adapters/tone');

    const second = planAdapter('tone', spec, {
      exists: true,
      runtimeLoading: true,
      pods: await observe([a, b]),
    });
    expect(second).toMatchObject({ load: [], holders: ['pod-0', 'pod-1'], condition: { reason: 'Loaded' } });
  });

  it('treats an already-loaded answer as held and reports an unreachable pod as a failure', async () => {
    const again = await applyLoads([
      { pod: 'pod-0', url: a.url, body: { lora_name: 'tone', lora_path: '/adapters/tone' } },
    ]);
    expect(again).toEqual(new Map());
    const closed = await startSimulator({ models: ['llama'] });
    const url = closed.url;
    await closed.close();
    const failures = await applyLoads([{ pod: 'gone', url, body: { lora_name: 'tone', lora_path: 'x' } }]);
    expect([...failures.keys()]).toEqual(['gone']);
  });

  it('unloads from the pods that list it; a pod that no longer has it (404) counts as done; an unreachable pod fails', async () => {
    const pods = await observe([a, b]);
    const unloads = planAdapterRemoval('tone', { exists: true, runtimeLoading: true, pods });
    expect(unloads.map((u) => u.pod)).toEqual(['pod-0', 'pod-1']);
    expect(await applyUnloads(unloads)).toEqual(new Map());
    expect(await loadedAdapters(a.url)).toEqual([]);
    expect(await loadedAdapters(b.url)).toEqual([]);
    // Again: both engines answer 404 "cannot be found", which is what an unload wants.
    expect(await applyUnloads(unloads)).toEqual(new Map());
    const closed = await startSimulator({ models: ['llama'] });
    const url = closed.url;
    await closed.close();
    const failures = await applyUnloads([{ pod: 'gone', url, body: { lora_name: 'tone' } }]);
    expect([...failures.keys()]).toEqual(['gone']);
  });
});

describe('an adapter step applied against the simulator (operator/adapters/reconcile.ts → apply)', () => {
  const NOW = '2026-01-01T00:00:00.000Z';
  const base = chatModel('llama', { engine: { type: 'simulator', lora: {} } });
  const tone = chatModel('tone', {
    id: 'Acme/Tone',
    engine: undefined,
    adapter: { base: 'llama', source: '/adapters/tone' },
  });
  const planOf = (m: typeof tone) =>
    planModel(m, { deployment: null, serviceExists: false, endpointSlices: [], now: NOW });

  it('observes the base (an engine that does not answer is ready to Kubernetes but marked unanswered, issue 47.10), loads where the step says, and applies the plan that settles', async () => {
    const closed = await startSimulator({ models: ['llama'] });
    const gone = closed.url;
    await closed.close();
    const pods = await observeBasePods([a.url, gone]);
    expect(pods.map((p) => [p.url, p.ready, p.unanswered === undefined])).toEqual([
      [a.url, true, true],
      [gone, true, false],
    ]);
    const step = planAdapterStep(tone, planOf(tone), base, pods, NOW);
    expect(a.adapters().has('Acme/Tone')).toBe(false); // planned, not yet loaded
    const plan = await applyAdapterStep(step);
    expect(a.adapters().get('Acme/Tone')).toBe('/adapters/tone');
    expect(plan.catalogue).toMatchObject({ action: 'put', entry: { endpoints: [{ url: a.url }] } });

    const deleted = {
      ...tone,
      metadata: { ...tone.metadata, deletionTimestamp: NOW, finalizers: [FINALIZER] },
    };
    const removal = planAdapterStep(deleted, planOf(deleted), base, await observeBasePods([a.url]), NOW);
    expect(a.adapters().has('Acme/Tone')).toBe(true);
    expect((await applyAdapterStep(removal)).finalizer).toBe('remove');
    expect(await loadedAdapters(a.url)).toEqual([]);
  });
});
