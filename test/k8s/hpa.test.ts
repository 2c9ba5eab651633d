// An HPA beside the operator (issue 47.8/9), on a control plane whose controllers are real: the
// HorizontalPodAutoscaler is kube-controller-manager's own, writing the Model's replicas through
// its scale subresource (test/cluster/control-plane.ts; kwok plays the kubelets). There is no
// metrics server, so the HPA acts on what needs no metrics: replicas below its minReplicas are
// raised to it — the write an HPA makes, by the writer that makes it. Before the fix the operator
// scaled the Model straight back (no demand: one replica), the HPA up again on its next sync, and
// the Model read Degraded=False, Scaling=False Steady.
import { describe, expect, it } from 'vitest';
import { DemandStore } from '../../core/demand/demand.ts';
import { chatModel } from '../../operator/fixtures.ts';
import { emptyFleet } from '../../operator/fleet/profiles.ts';
import type { Model } from '../../operator/model/model.ts';
import type { AutoscalingSpec } from '../../operator/model/spec.ts';
import type { ControlPlane } from '../cluster/control-plane.ts';
import { createModel, json, readModel, waitUntil } from './helpers.ts';
import { kwokSuite } from './kwok-suite.ts';

let cp: ControlPlane;
kwokSuite(
  'hpa',
  emptyFleet,
  async (plane) => {
    cp = plane;
  },
  (redis) => ({ demand: new DemandStore(redis.client()), scaleIntervalMs: 500 }),
);

function autoscaled(name: string, autoscaling: AutoscalingSpec): Model {
  return chatModel(name, {
    id: `acme/${name}`,
    engine: { type: 'simulator', replicas: 1, minReplicas: 1, maxReplicas: 4, autoscaling },
  });
}

/** An HPA on the Model that holds it at `replicas` (its minReplicas; CPU, which nothing measures here). */
const hpaOn = (model: string, replicas: number) =>
  cp.api('POST', '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers', {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: { name: model },
    spec: {
      scaleTargetRef: { apiVersion: 'modelplane.dev/v1alpha1', kind: 'Model', name: model },
      minReplicas: replicas,
      maxReplicas: replicas,
      metrics: [
        {
          type: 'Resource',
          resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } },
        },
      ],
    },
  });
const condition = (m: Model, type: string) => m.status?.conditions?.find((c) => c.type === type);
const replicasOf = async (name: string) => (await readModel(cp, name)).spec.engine?.replicas;

describe('an HPA beside the operator (kwok control plane, the real HPA controller)', () => {
  it('47.8 one writer, enforced: the operator sees the HPA’s write in managedFields, stops writing, and says so in a condition and an event; handed back, it scales again', async () => {
    // A short window and no delay: without the fix the operator undoes the HPA within a second.
    await createModel(cp, autoscaled('fought', { windowSeconds: 1, scaleDownDelaySeconds: 0 }));
    await waitUntil(
      'the scaler deciding for it',
      async () => (await readModel(cp, 'fought')).status?.autoscaling?.reason !== undefined,
      30_000,
    );
    expect((await hpaOn('fought', 2)).status).toBe(201);
    const stopped = await waitUntil(
      'Scaling=False SecondWriter',
      async () => {
        const m = await readModel(cp, 'fought');
        return condition(m, 'Scaling')?.reason === 'SecondWriter' ? m : undefined;
      },
      60_000,
    );
    expect(condition(stopped, 'Scaling')?.message).toMatch(
      /written by kube-controller-manager \(through the scale subresource\)/,
    );
    expect(condition(stopped, 'Degraded')).toMatchObject({ status: 'True', reason: 'SecondReplicasWriter' });
    expect(stopped.status?.autoscaling).toMatchObject({ desiredReplicas: 2, reason: 'SecondWriter' });
    // No fight: the HPA's 2 stands, sampled for 4 s (the operator decides every 0.5 s).
    for (let i = 0; i < 16; i++) {
      expect(await replicasOf('fought')).toBe(2);
      await new Promise((r) => setTimeout(r, 250));
    }
    const events = await json<{ items: { reason: string; type: string; message: string }[] }>(
      await cp.api(
        'GET',
        '/api/v1/namespaces/default/events?fieldSelector=involvedObject.kind%3DModel,involvedObject.name%3Dfought',
      ),
    );
    const warned = events.items.filter((e) => e.reason === 'SecondReplicasWriter');
    expect(warned).toHaveLength(1); // once, not every tick
    expect(warned[0]).toMatchObject({ type: 'Warning' });
    expect(warned[0]?.message).toMatch(/kube-controller-manager/);

    // Handed back: the HPA removed, replicas written in the Model itself; the operator takes over.
    await cp.api('DELETE', '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/fought');
    const patched = await cp.api(
      'PATCH',
      '/apis/modelplane.dev/v1alpha1/namespaces/default/models/fought',
      { spec: { engine: { replicas: 3 } } },
      'application/merge-patch+json',
    );
    expect(patched.status).toBe(200);
    await waitUntil(
      'the operator scaling it down to 1 again',
      async () => (await replicasOf('fought')) === 1,
      30_000,
    );
    const after = await readModel(cp, 'fought');
    expect(condition(after, 'Degraded')?.status).toBe('False');
  }, 240_000);

  it('47.9 writer: external reports what the HPA set and who set it', async () => {
    await createModel(cp, autoscaled('handed', { writer: 'external' }));
    expect((await hpaOn('handed', 2)).status).toBe(201);
    const m = await waitUntil(
      'ExternalWriter with the HPA’s 2',
      async () => {
        const m = await readModel(cp, 'handed');
        return m.status?.autoscaling?.desiredReplicas === 2 ? m : undefined;
      },
      60_000,
    );
    expect(m.status?.autoscaling?.reason).toBe('ExternalWriter');
    expect(condition(m, 'Scaling')).toMatchObject({ status: 'False', reason: 'ExternalWriter' });
    expect(condition(m, 'Scaling')?.message).toMatch(/^replicas 2, last written by kube-controller-manager/);
    expect(condition(m, 'Degraded')?.status).toBe('False'); // not a second writer: the one named
  }, 120_000);
});
