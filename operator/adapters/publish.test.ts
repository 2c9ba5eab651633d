import { describe, expect, it } from 'vitest';
import { chatModel } from '../fixtures.ts';
import { planModel } from '../reconcile/plan.ts';
import { type BasePod, planAdapter } from './plan.ts';
import { afterLoads, baseState, loraName, publishAdapter } from './publish.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const base = chatModel('llama', { engine: { type: 'simulator', lora: {} } });
const tone = chatModel('tone', {
  id: 'Acme/Tone',
  engine: undefined,
  adapter: { base: 'llama', source: 'org/tone' },
  pricing: { USD: { input: '3', output: '5' } },
});
const pod = (url: string, loaded: string[] = []): BasePod => ({
  name: url,
  url,
  ready: true,
  terminating: false,
  loaded,
});
const modelPlan = (m = tone) =>
  planModel(m, { deployment: null, serviceExists: false, endpointSlices: [], now: NOW });
const byType = (conditions: { type: string }[] | undefined, type: string) =>
  conditions?.find((c) => c.type === type);

describe('publishAdapter', () => {
  it('catalogues the adapter under its own id and prices, on the pods that hold it only', () => {
    const state = baseState(base, [pod('http://a:1', ['Acme/Tone']), pod('http://b:1')]);
    const plan = publishAdapter(
      tone,
      modelPlan(),
      planAdapter(loraName(tone), tone.spec.adapter!, state),
      base,
      NOW,
    );
    expect(plan.catalogue).toMatchObject({
      action: 'put',
      entry: { id: 'Acme/Tone', endpoints: [{ url: 'http://a:1' }], tokenizer: 'simulator' },
    });
    if (plan.catalogue.action === 'put')
      expect(plan.catalogue.entry.pricing.USD).toMatchObject({ input: '3', output: '5' });
    expect(plan.status).toMatchObject({ readyReplicas: 1, endpoints: ['http://a:1'] });
    expect(plan.status?.selector).toBeUndefined();
    expect(byType(plan.status?.conditions, 'Ready')).toMatchObject({
      status: 'True',
      reason: 'AdapterLoaded',
    });
    expect(byType(plan.status?.conditions, 'AdapterLoaded')).toMatchObject({
      status: 'True',
      reason: 'Loaded',
    });
  });

  it('after the loads, a pod that took the adapter holds it; one that refused is LoadFailed when none holds it', () => {
    const state = baseState(base, [pod('http://a:1'), pod('http://b:1')]);
    const first = planAdapter('Acme/Tone', tone.spec.adapter!, state);
    const took = planAdapter(
      'Acme/Tone',
      tone.spec.adapter!,
      afterLoads(state, first, new Map(), 'Acme/Tone'),
    );
    expect(took.holders).toEqual(['http://a:1', 'http://b:1']);
    const refused = new Map([
      ['http://a:1', '400 bad rank'],
      ['http://b:1', '400 bad rank'],
    ]);
    const none = planAdapter(
      'Acme/Tone',
      tone.spec.adapter!,
      afterLoads(state, first, refused, 'Acme/Tone'),
      refused,
    );
    const plan = publishAdapter(tone, modelPlan(), none, base, NOW);
    expect(plan.catalogue).toMatchObject({ action: 'put', entry: { endpoints: [] } });
    expect(byType(plan.status?.conditions, 'Degraded')).toMatchObject({
      status: 'True',
      reason: 'LoadFailed',
    });
    expect(byType(plan.status?.conditions, 'Ready')).toMatchObject({ status: 'False', reason: 'LoadFailed' });
  });

  it('a base being deleted counts as missing; a base without engine.lora cannot load', () => {
    expect(baseState({ ...base, metadata: { ...base.metadata, deletionTimestamp: NOW } }, [])).toEqual({
      exists: false,
    });
    const plain = chatModel('llama', { engine: { type: 'simulator' } });
    expect(baseState(plain, [])).toMatchObject({ exists: true, runtimeLoading: false });
  });

  it('leaves a plan that catalogues nothing alone (the adapter is being deleted)', () => {
    const going = { ...tone, metadata: { ...tone.metadata, deletionTimestamp: NOW, finalizers: [] } };
    const plan = modelPlan(going);
    const adapter = planAdapter(
      'Acme/Tone',
      tone.spec.adapter!,
      baseState(base, [pod('http://a:1', ['Acme/Tone'])]),
    );
    expect(publishAdapter(going, plan, adapter, base, NOW)).toBe(plan);
  });
});
