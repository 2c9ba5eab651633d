// The adapter step alone (issue 46 item 3): what reconciling an adapter Model asks of its base's
// engines is decided with no engine called — the base pods here have addresses nothing listens
// on — and the plan the calls' outcome settles is a pure function of that outcome.
import { describe, expect, it } from 'vitest';
import { basePod, chatModel } from '../fixtures.ts';
import { FINALIZER, type Model } from '../model/model.ts';
import { planModel } from '../reconcile/plan.ts';
import { adapterUnloads, planAdapterStep } from './reconcile.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const base = chatModel('llama', { engine: { type: 'simulator', lora: {} } });
const tone = chatModel('tone', {
  id: 'Acme/Tone',
  engine: undefined,
  adapter: { base: 'llama', source: 'org/tone' },
});
const planOf = (m: Model) =>
  planModel(m, { deployment: null, serviceExists: false, endpointSlices: [], now: NOW });
const deleted = (m: Model): Model => ({
  ...m,
  metadata: { ...m.metadata, deletionTimestamp: NOW, finalizers: [FINALIZER] },
});

describe('planAdapterStep (pure: the engine calls are apply’s)', () => {
  it('a new adapter: the loads on the base pods without it, the finalizer still to add; no engine called', () => {
    const pods = [basePod('a'), basePod('b', ['Acme/Tone'])];
    const step = planAdapterStep(tone, planOf(tone), base, pods, NOW);
    // A value, not a promise: nothing was awaited, so nothing was asked of an engine.
    expect(step).not.toBeInstanceOf(Promise);
    expect(step.plan.finalizer).toBe('add');
    expect(step.load).toEqual([
      { pod: 'a', url: 'http://a:8000', body: { lora_name: 'Acme/Tone', lora_path: 'org/tone' } },
    ]);
    expect(step.unload).toEqual([]);
  });

  it('settles on the outcome: published where the loads took, LoadFailed where every pod refused', () => {
    const step = planAdapterStep(tone, planOf(tone), base, [basePod('a'), basePod('b')], NOW);
    const took = step.settle(new Map());
    expect(took.catalogue).toMatchObject({
      action: 'put',
      entry: { endpoints: [{ url: 'a' }, { url: 'b' }], tokenizer: 'simulator' },
    });
    expect(took.finalizer).toBe('add');
    const refused = step.settle(
      new Map([
        ['a', '400 bad rank'],
        ['b', '400 bad rank'],
      ]),
    );
    expect(refused.catalogue).toMatchObject({ action: 'put', entry: { endpoints: [] } });
    expect(refused.status?.conditions?.find((c) => c.type === 'AdapterLoaded')).toMatchObject({
      reason: 'LoadFailed',
      message: 'loading on a failed: 400 bad rank',
    });
  });

  it('a deleted adapter: the unloads from the pods that list it; the finalizer comes off only when none failed', () => {
    const gone = deleted(tone);
    const step = planAdapterStep(gone, planOf(gone), base, [basePod('a', ['Acme/Tone']), basePod('b')], NOW);
    expect(step.load).toEqual([]);
    expect(step.unload).toEqual([{ pod: 'a', url: 'http://a:8000', body: { lora_name: 'Acme/Tone' } }]);
    expect(step.settle(new Map()).finalizer).toBe('remove');
    const held = step.settle(new Map([['a', '500 engine busy']]));
    expect(held).toMatchObject({
      finalizer: 'none',
      retry: 'adapter Acme/Tone: unloading on a failed: 500 engine busy',
    });
  });

  it('a Model that is no adapter: no calls, and its plan as it was', () => {
    const plan = planOf(base);
    const step = planAdapterStep(base, plan, undefined, [], NOW);
    expect(step).toMatchObject({ load: [], unload: [] });
    expect(step.settle(new Map())).toBe(plan);
  });

  it('a removed file (no finalizer): the unloads alone, none for a Model that is no adapter', () => {
    expect(adapterUnloads(tone, base, [basePod('a', ['Acme/Tone'])])).toEqual([
      { pod: 'a', url: 'http://a:8000', body: { lora_name: 'Acme/Tone' } },
    ]);
    expect(adapterUnloads(base, undefined, [basePod('a', ['Acme/Tone'])])).toEqual([]);
  });
});
