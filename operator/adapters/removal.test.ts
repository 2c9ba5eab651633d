import { describe, expect, it } from 'vitest';
import { basePod, chatModel } from '../fixtures.ts';
import { FINALIZER } from '../model/model.ts';
import { planModel } from '../reconcile/plan.ts';
import { baseState } from './publish.ts';
import { holdFinalizer, planAdapterRemoval } from './removal.ts';

const base = chatModel('llama', { engine: { type: 'simulator', lora: {} } });
const pod = basePod;

describe('planAdapterRemoval', () => {
  it('unloads from every live base pod that lists the adapter, by its name, and nowhere else', () => {
    const state = baseState(base, [
      pod('a', ['Acme/Tone', 'Acme/Other']),
      pod('b', ['Acme/Other']),
      pod('c', ['Acme/Tone'], { ready: false }),
      pod('d', ['Acme/Tone'], { terminating: true }),
      pod('e', ['Acme/Tone']),
    ]);
    expect(planAdapterRemoval('Acme/Tone', state)).toEqual([
      { pod: 'a', url: 'http://a:8000', body: { lora_name: 'Acme/Tone' } },
      { pod: 'e', url: 'http://e:8000', body: { lora_name: 'Acme/Tone' } },
    ]);
  });

  it('unloads nothing when the base is gone or being deleted (its engines go with it)', () => {
    const pods = [pod('a', ['Acme/Tone'])];
    expect(planAdapterRemoval('Acme/Tone', baseState(undefined, pods))).toEqual([]);
    const deleting = { ...base, metadata: { ...base.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } };
    expect(planAdapterRemoval('Acme/Tone', baseState(deleting, pods))).toEqual([]);
  });
});

describe('holdFinalizer', () => {
  const tone = chatModel('tone', {
    id: 'Acme/Tone',
    engine: undefined,
    adapter: { base: 'llama', source: 'org/tone' },
  });
  const deleted = {
    ...tone,
    metadata: { ...tone.metadata, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: [FINALIZER] },
  };
  const plan = planModel(deleted, {
    deployment: null,
    serviceExists: false,
    endpointSlices: [],
    now: '2026-01-01T00:00:00.000Z',
  });

  it('lets the finalizer go once every unload succeeded', () => {
    expect(plan.finalizer).toBe('remove');
    expect(holdFinalizer(plan, 'Acme/Tone', new Map())).toBe(plan);
  });

  it('keeps the finalizer (but still removes the catalogue entry) while a pod refused, and asks for a retry', () => {
    const held = holdFinalizer(plan, 'Acme/Tone', new Map([['http://a:8000', '500 engine busy']]));
    expect(held.finalizer).toBe('none');
    expect(held.catalogue).toEqual(plan.catalogue);
    expect(held.catalogue.action).toBe('remove');
    expect(held.retry).toBe('adapter Acme/Tone: unloading on http://a:8000 failed: 500 engine busy');
    expect(held.reasons.at(-1)).toContain('the finalizer stays');
  });
});
