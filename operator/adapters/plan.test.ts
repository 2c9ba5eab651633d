import { describe, expect, it } from 'vitest';
import { basePod } from '../fixtures.ts';
import { planAdapter } from './plan.ts';

const spec = { base: 'llama', source: 'org/tone-lora' };
const pod = basePod;

describe('planAdapter', () => {
  it('says the base is missing and loads nothing', () => {
    const plan = planAdapter('tone', spec, { exists: false });
    expect(plan).toMatchObject({
      load: [],
      holders: [],
      condition: { status: 'False', reason: 'BaseMissing' },
    });
  });

  it('refuses a base whose engine cannot load adapters at runtime', () => {
    const plan = planAdapter('tone', spec, { exists: true, runtimeLoading: false, pods: [pod('a')] });
    expect(plan.load).toEqual([]);
    expect(plan.condition.reason).toBe('BaseCannotLoadAdapters');
  });

  it('loads on every ready pod without it, under its own name, and skips unready and terminating pods', () => {
    const plan = planAdapter('tone', spec, {
      exists: true,
      runtimeLoading: true,
      pods: [
        pod('a'),
        pod('b', ['tone']),
        pod('c', [], { ready: false }),
        pod('d', [], { terminating: true }),
      ],
    });
    expect(plan.load).toEqual([
      { pod: 'a', url: 'http://a:8000', body: { lora_name: 'tone', lora_path: 'org/tone-lora' } },
    ]);
    expect(plan.holders).toEqual(['b']);
    expect(plan.condition).toMatchObject({ status: 'True', reason: 'Loaded' });
    expect(plan.condition.message).toContain('1 of 2');
  });

  it('reloads on a new base pod and does not count a terminating holder', () => {
    const plan = planAdapter('tone', spec, {
      exists: true,
      runtimeLoading: true,
      pods: [pod('old', ['tone'], { terminating: true }), pod('new')],
    });
    expect(plan.load.map((a) => a.pod)).toEqual(['new']);
    expect(plan.holders).toEqual([]);
    expect(plan.condition.reason).toBe('Loading');
  });

  it('reports a failed load while no pod holds it, and retries it', () => {
    const plan = planAdapter(
      'tone',
      spec,
      { exists: true, runtimeLoading: true, pods: [pod('a')] },
      new Map([['a', '404 adapter not found']]),
    );
    expect(plan.load.map((a) => a.pod)).toEqual(['a']);
    expect(plan.condition).toMatchObject({ status: 'False', reason: 'LoadFailed' });
    expect(plan.condition.message).toContain('404 adapter not found');
  });

  it('waits while the base has no ready pod', () => {
    const plan = planAdapter('tone', spec, {
      exists: true,
      runtimeLoading: true,
      pods: [pod('a', [], { ready: false })],
    });
    expect(plan).toMatchObject({ load: [], holders: [], condition: { reason: 'NoReadyBasePods' } });
  });
});
