// The plan with no cluster at all (KubeAI's pod_plan_test): a Model and what was observed in,
// the objects, catalogue action and status out.
import type { V1Deployment, V1EndpointSlice } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { chatModel } from '../fixtures.ts';
import { FINALIZER, type Model } from '../model/model.ts';
import { type Observed, planModel } from './plan.ts';

const now = '2026-01-01T00:00:00Z';
const created = '2025-06-01T12:00:00Z';

function model(over: Partial<Model['spec']> = {}, meta: Partial<Model['metadata']> = {}): Model {
  const m = chatModel('llama', over);
  m.metadata = {
    ...m.metadata,
    uid: 'uid-1',
    generation: 2,
    creationTimestamp: created,
    finalizers: [FINALIZER],
    ...meta,
  };
  return m;
}

function slice(ready: boolean[], port = 9000): V1EndpointSlice {
  return {
    addressType: 'IPv4',
    metadata: { name: 'model-llama-abc', labels: { 'kubernetes.io/service-name': 'model-llama' } },
    ports: [{ name: 'http', port }],
    endpoints: ready.map((r, i) => ({ addresses: [`10.0.0.${i + 1}`], conditions: { ready: r } })),
  };
}

const deployment = (replicas: number, ready: number): V1Deployment => ({
  status: { replicas, readyReplicas: ready },
});
const observed = (o: Partial<Observed> = {}): Observed => ({
  deployment: null,
  serviceExists: false,
  endpointSlices: [],
  now,
  ...o,
});
const cond = (plan: ReturnType<typeof planModel>, type: string) =>
  plan.status?.conditions?.find((c) => c.type === type);

describe('planModel', () => {
  const cases: {
    name: string;
    model: Model;
    observed: Observed;
    catalogue: 'put' | 'remove' | 'none';
    endpoints?: string[];
    ready: { status: string; reason: string };
    deployment: boolean;
  }[] = [
    {
      name: 'new engine model, nothing ready yet: deploy, catalogue it with no endpoint (callers get a retryable 500)',
      model: model(),
      observed: observed(),
      catalogue: 'put',
      endpoints: [],
      ready: { status: 'False', reason: 'WaitingForEndpoints' },
      deployment: true,
    },
    {
      name: 'ready endpoints become the entry endpoints; unready ones do not',
      model: model(),
      observed: observed({ deployment: deployment(2, 1), endpointSlices: [slice([true, false])] }),
      catalogue: 'put',
      endpoints: ['http://10.0.0.1:9000'],
      ready: { status: 'True', reason: 'EndpointsReady' },
      deployment: true,
    },
    {
      name: 'external model goes straight to the catalogue at its URL, no Deployment',
      model: model({ engine: undefined, external: { url: 'https://api.example.com' } }),
      observed: observed(),
      catalogue: 'put',
      endpoints: ['https://api.example.com'],
      ready: { status: 'True', reason: 'External' },
      deployment: false,
    },
    {
      name: 'CON-9 comingSoon is catalogued for display (ribbon) with no endpoint needed',
      model: model({ availability: 'comingSoon' }),
      observed: observed(),
      catalogue: 'put',
      endpoints: [],
      ready: { status: 'True', reason: 'ComingSoon' },
      deployment: true,
    },
    {
      name: 'scaled to zero: catalogued with no endpoint (a retryable 500, not a 404)',
      model: model({ engine: { type: 'simulator', replicas: 0 } }),
      observed: observed({ deployment: deployment(0, 0) }),
      catalogue: 'put',
      endpoints: [],
      ready: { status: 'False', reason: 'ScaledToZero' },
      deployment: true,
    },
    {
      name: 'duplicate id: leave the catalogue to the first Model',
      model: model(),
      observed: observed({ idClaimedBy: 'Model/default/first', endpointSlices: [slice([true])] }),
      catalogue: 'none',
      ready: { status: 'False', reason: 'DuplicateId' },
      deployment: true,
    },
  ];

  it.each(cases)('$name', (c) => {
    const plan = planModel(c.model, c.observed);
    expect(plan.catalogue.action).toBe(c.catalogue);
    if (plan.catalogue.action === 'put' && c.endpoints) {
      expect(plan.catalogue.entry.endpoints).toEqual(c.endpoints.map((url) => ({ url })));
    }
    expect(cond(plan, 'Ready')).toMatchObject(c.ready);
    expect(plan.deployment !== null).toBe(c.deployment);
    expect(plan.reasons.length).toBeGreaterThan(0);
  });

  it('the entry carries id, prices and created = creationTimestamp in unix seconds', () => {
    const plan = planModel(model(), observed({ endpointSlices: [slice([true])] }));
    if (plan.catalogue.action !== 'put') throw new Error('expected a put');
    expect(plan.catalogue.entry).toMatchObject({
      id: 'Meta-Llama/Llama-3.1-8B-Instruct',
      kind: 'chat',
      created: Date.parse(created) / 1000,
      source: 'Model/default/llama',
      pricing: { USD: { input: '0.15', cachedInput: '0.075', output: '0.60' } },
      capabilities: { tools: true, vision: false, edit: false, imageToVideo: false },
    });
  });

  it('adds the finalizer first when missing', () => {
    expect(planModel(model({}, { finalizers: [] }), observed()).finalizer).toBe('add');
    expect(planModel(model(), observed()).finalizer).toBe('none');
  });

  it('on delete: remove the entry, then the finalizer; apply nothing, write no status', () => {
    const plan = planModel(
      model({}, { deletionTimestamp: now }),
      observed({ endpointSlices: [slice([true])] }),
    );
    expect(plan).toMatchObject({
      finalizer: 'remove',
      deployment: null,
      service: null,
      status: null,
      catalogue: { action: 'remove', id: 'Meta-Llama/Llama-3.1-8B-Instruct', source: 'Model/default/llama' },
    });
  });

  it('switching from engine to external deletes the owned Deployment and Service', () => {
    const m = model({ engine: undefined, external: { url: 'https://x.example' } });
    const plan = planModel(m, observed({ deployment: deployment(1, 1), serviceExists: true }));
    expect(plan.remove).toEqual([
      { kind: 'Deployment', name: 'model-llama' },
      { kind: 'Service', name: 'model-llama' },
    ]);
  });

  it('owned objects carry a controller owner reference to the Model', () => {
    const plan = planModel(model(), observed());
    const ref = {
      apiVersion: 'modelplane.dev/v1alpha1',
      kind: 'Model',
      name: 'llama',
      uid: 'uid-1',
      controller: true,
    };
    expect(plan.deployment?.metadata?.ownerReferences).toEqual([expect.objectContaining(ref)]);
    expect(plan.service?.metadata?.ownerReferences).toEqual([expect.objectContaining(ref)]);
    expect(plan.deployment?.metadata?.name).toBe('model-llama');
  });

  it('replicas are kept within min and max', () => {
    const over = planModel(model({ engine: { type: 'simulator', replicas: 9, maxReplicas: 3 } }), observed());
    const under = planModel(
      model({ engine: { type: 'simulator', replicas: 0, minReplicas: 1 } }),
      observed(),
    );
    expect(over.deployment?.spec?.replicas).toBe(3);
    expect(under.deployment?.spec?.replicas).toBe(1);
  });

  it('Degraded follows the Deployment reporting a failure', () => {
    const failing: V1Deployment = {
      status: {
        replicas: 1,
        readyReplicas: 0,
        conditions: [
          { type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'stuck' },
        ],
      },
    };
    const plan = planModel(model(), observed({ deployment: failing }));
    expect(cond(plan, 'Degraded')).toMatchObject({ status: 'True', reason: 'ProgressDeadlineExceeded' });
  });

  it('keeps lastTransitionTime while a condition does not change', () => {
    const m = model();
    m.status = {
      conditions: [{ type: 'Ready', status: 'False', reason: 'x', message: '', lastTransitionTime: created }],
    };
    expect(cond(planModel(m, observed()), 'Ready')?.lastTransitionTime).toBe(created);
    const ready = planModel(m, observed({ endpointSlices: [slice([true])] }));
    expect(cond(ready, 'Ready')?.lastTransitionTime).toBe(now);
  });
});

describe('planModel: aliases (issue 30)', () => {
  it('catalogues every alias when none is taken', () => {
    const plan = planModel(
      model({ aliases: ['claude-haiku-*', 'gpt-5'] }),
      observed({ endpointSlices: [slice([true])] }),
    );
    if (plan.catalogue.action !== 'put') throw new Error('expected a put');
    expect(plan.catalogue.entry.aliases).toEqual(['claude-haiku-*', 'gpt-5']);
    expect(cond(plan, 'Degraded')).toMatchObject({ status: 'False' });
  });

  it('leaves a taken alias out, still serves the model, and says which and who holds it (Degraded AliasConflict)', () => {
    const plan = planModel(
      model({ aliases: ['claude-haiku-*', 'gpt-5'] }),
      observed({
        endpointSlices: [slice([true])],
        aliasesTaken: [{ alias: 'gpt-5', heldBy: 'Model/default/gpt', as: 'id' }],
      }),
    );
    if (plan.catalogue.action !== 'put') throw new Error('expected a put');
    expect(plan.catalogue.entry.aliases).toEqual(['claude-haiku-*']);
    expect(cond(plan, 'Ready')).toMatchObject({ status: 'True' });
    expect(cond(plan, 'Degraded')).toMatchObject({ status: 'True', reason: 'AliasConflict' });
    expect(cond(plan, 'Degraded')?.message).toContain('gpt-5 (the id of Model/default/gpt)');
  });
});
