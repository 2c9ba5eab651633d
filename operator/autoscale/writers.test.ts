// Who writes a Model's replicas, and the status that says so: managedFields as kube-apiserver 1.33
// records them (shapes copied from a real server: a scale-subresource write has no time and moves
// f:replicas to its writer), no cluster. The same on a real API server: test/k8s/hpa.test.ts.
import { describe, expect, it } from 'vitest';
import { noDemand } from '../../core/demand/demand.ts';
import { chatModel } from '../fixtures.ts';
import type { Model } from '../model/model.ts';
import { planModel } from '../reconcile/plan.ts';
import { decideReplicas, freshMemory } from './decide.ts';
import { decisionStatus, scalingStatus } from './status.ts';
import { replicasWriter, secondReplicasWriter } from './writers.ts';

const replicasField = { 'f:spec': { 'f:engine': { 'f:replicas': {} } } };
const authored = {
  manager: 'kubectl-client-side-apply',
  operation: 'Update',
  time: '2026-12-02T16:41:09Z',
  fieldsV1: { 'f:spec': { 'f:engine': { '.': {}, 'f:type': {}, 'f:autoscaling': {} }, 'f:id': {} } },
};
const viaScale = (manager: string) => ({
  manager,
  operation: 'Update',
  subresource: 'scale',
  fieldsV1: replicasField,
});

function scaled(replicas: number, writer: 'operator' | 'external' | undefined, owner: object | null): Model {
  const m = chatModel('llama', {
    engine: {
      type: 'simulator',
      replicas,
      minReplicas: 1,
      maxReplicas: 4,
      autoscaling: writer ? { writer } : {},
    },
  });
  m.metadata.generation = 1;
  m.metadata.managedFields = owner ? [owner, authored] : [{ ...authored, fieldsV1: replicasField }];
  return m;
}
const observed = { deployment: null, serviceExists: false, endpointSlices: [], now: '2026-12-02T17:00:00Z' };
const cond = (m: Model, type: string) =>
  planModel(m, observed).status?.conditions?.find((c) => c.type === type);

describe('one writer of replicas (47.8), read from managedFields', () => {
  it('47.8 the field’s owner is its last writer; a second writer is another manager through the scale subresource', () => {
    // The Model's author set replicas when it made the Model: not a second writer.
    expect(replicasWriter(scaled(1, undefined, null))).toMatchObject({
      manager: 'kubectl-client-side-apply',
    });
    expect(secondReplicasWriter(scaled(1, undefined, null))).toBeNull();
    // The operator's own writes, named or from before they were (client-node's user agent).
    expect(secondReplicasWriter(scaled(2, undefined, viaScale('modelplane-operator')))).toBeNull();
    expect(secondReplicasWriter(scaled(2, undefined, viaScale('node-fetch')))).toBeNull();
    // An HPA (the controller manager) or `kubectl scale`.
    expect(secondReplicasWriter(scaled(2, undefined, viaScale('kube-controller-manager')))).toEqual({
      manager: 'kube-controller-manager',
      subresource: 'scale',
    });
    expect(secondReplicasWriter(scaled(3, undefined, viaScale('kubectl')))?.manager).toBe('kubectl');
  });

  it('47.8 a second writer on a Model the operator scales: Scaling=False SecondWriter and Degraded=True, naming it', () => {
    const m = scaled(2, 'operator', viaScale('kube-controller-manager'));
    // Even with a decision of ours at hand: it is not shown as if it were in force.
    const d = decideReplicas(
      { min: 1, max: 4, targetInFlight: 8, scaleDownDelayMs: 0, windowMs: 1, idleMs: 0 },
      { now: 10, current: 2, demand: noDemand(), engine: null },
      freshMemory(0),
    );
    const plan = planModel(m, { ...observed, autoscaling: decisionStatus(m, 2, noDemand(), d, 10) });
    const scaling = plan.status?.conditions?.find((c) => c.type === 'Scaling');
    expect(scaling).toMatchObject({ status: 'False', reason: 'SecondWriter' });
    expect(scaling?.message).toMatch(/written by kube-controller-manager \(through the scale subresource\)/);
    expect(scaling?.message).toMatch(/stopped writing replicas/);
    expect(plan.status?.autoscaling).toMatchObject({ desiredReplicas: 2, reason: 'SecondWriter' });
    expect(cond(m, 'Degraded')).toMatchObject({ status: 'True', reason: 'SecondReplicasWriter' });
    // Handed back (the author wrote replicas in the Model itself): no problem, nothing stale shown.
    const back = scaled(2, 'operator', null);
    back.status = plan.status!;
    expect(cond(back, 'Degraded')?.status).toBe('False');
    expect(cond(back, 'Scaling')).toBeUndefined();
  });
});

describe('the scaling status (47.9)', () => {
  it('47.9 writer: external reports what the external writer set and who, not our last decision', () => {
    const m = scaled(2, 'external', viaScale('kube-controller-manager'));
    // What the status held from before the switch: our decision to go to 1.
    m.status = {
      autoscaling: { desiredReplicas: 1, reason: 'ScaledDown', lastScaleTime: '2026-12-02T16:00:00Z' },
      conditions: [
        { type: 'Scaling', status: 'True', reason: 'ScaledDown', message: 'scaled down from 2 to 1' },
      ],
    };
    const stale = {
      status: { desiredReplicas: 1, reason: 'ScaledDown' },
      condition: { type: 'Scaling' as const, status: 'True' as const, reason: 'ScaledDown', message: 'x' },
    };
    const s = scalingStatus(m, 2, stale);
    expect(s.status).toEqual({
      desiredReplicas: 2,
      reason: 'ExternalWriter',
      lastScaleTime: '2026-12-02T16:00:00Z',
    });
    expect(s.condition).toMatchObject({ status: 'False', reason: 'ExternalWriter' });
    expect(s.condition?.message).toMatch(/^replicas 2, last written by kube-controller-manager/);
    expect(s.problem).toBeUndefined();
    expect(cond(m, 'Degraded')?.status).toBe('False');
  });

  it('47.9 a wake stays on show through the Steady ticks after it, until the next real change', () => {
    const p = { min: 0, max: 4, targetInFlight: 8, scaleDownDelayMs: 0, windowMs: 4_000, idleMs: 6_000 };
    const m = scaled(0, 'operator', viaScale('modelplane-operator'));
    let memory = freshMemory(0);
    let current = 0;
    const tick = (now: number, held: number) => {
      const demand = { inFlight: 0, queued: 0, held };
      const d = decideReplicas(p, { now, current, demand, engine: null }, memory);
      const s = decisionStatus(m, current, demand, d, now);
      memory = d.memory;
      current = d.desired;
      return { reason: d.reason, shown: s.status.reason, condition: s.condition };
    };
    const woken = tick(0, 1);
    expect(woken).toMatchObject({ reason: 'WokenByHeldRequest', condition: { status: 'True' } });
    for (const now of [2_000, 4_000, 6_000]) {
      const t = tick(now, 0);
      expect(t.reason).not.toBe('WokenByHeldRequest'); // the decision itself holds
      expect(t.shown).toBe('WokenByHeldRequest');
      expect(t.condition).toMatchObject({ status: 'False', reason: 'WokenByHeldRequest' });
      expect(t.condition.message).toMatch(/^woken from 0 to 1/);
    }
    // Idle long enough: the next real change replaces it.
    const asleep = tick(20_000, 0);
    expect(asleep).toMatchObject({
      reason: 'ScaledToZero',
      shown: 'ScaledToZero',
      condition: { status: 'True' },
    });
  });
});
