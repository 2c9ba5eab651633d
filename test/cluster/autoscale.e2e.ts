// make e2e-cluster: autoscaling on a control plane whose controllers are real (kube-apiserver,
// kube-controller-manager, kube-scheduler; kwok for nodes and kubelets), issue 32 item 1. The
// operator runs in-process as the leader; two "proxies" are the proxy's own demand board and
// publisher (proxy/demand/) writing to a real Redis — what a held or running call counts. A Model
// at minReplicas 0 is woken by held requests from two proxies (one scale-up, to one replica),
// grows with in-flight load to ceil(demand / targetInFlight), and goes back to zero after its
// delay, window and idle period — each step through the scale subresource, the Deployment, the
// scheduler, kwok's ready pods and the EndpointSlices into the catalogue, whose entry stays
// (listed, with no endpoint) at zero. The decision and its inputs are in the Model's status.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CatalogueStore } from '../../core/catalogue/store.ts';
import { DemandStore } from '../../core/demand/demand.ts';
import { chatModel } from '../../operator/fixtures.ts';
import { DemandBoard } from '../../proxy/demand/board.ts';
import { DemandPublisher } from '../../proxy/demand/publisher.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import {
  createModel,
  getTable,
  type OperatorReplica,
  readModel,
  startOperator,
  waitUntil,
} from '../k8s/helpers.ts';
import { type ControlPlane, ENGINE_START_DELAY_MS, startControlPlane } from './control-plane.ts';

const ID = 'Sleepy/Chat-7B';
let cp: ControlPlane;
let redis: TestRedis;
let operator: OperatorReplica;
const proxies: { board: DemandBoard; publisher: DemandPublisher }[] = [];

beforeAll(async () => {
  [cp, redis] = await Promise.all([startControlPlane(1), startRedis()]);
  operator = await startOperator(cp, redis.client(), 'op-autoscale', {
    demand: new DemandStore(redis.client()),
    scaleIntervalMs: 250,
  });
  for (let i = 0; i < 2; i++) {
    const board = new DemandBoard();
    const publisher = new DemandPublisher(new DemandStore(redis.client()), board, {
      intervalMs: 200,
      proxyId: `proxy-${i}`,
    });
    publisher.start();
    proxies.push({ board, publisher });
  }
}, 1_800_000);

afterAll(async () => {
  for (const p of proxies) await p.publisher.stop();
  await operator?.stop();
  await Promise.all([cp?.stopAll(), redis?.stop()]);
});

interface Deployment {
  spec?: { replicas?: number };
  status?: { readyReplicas?: number };
}
const deployment = async () =>
  (await (
    await cp.api('GET', '/apis/apps/v1/namespaces/default/deployments/model-sleepy')
  ).json()) as Deployment;
const entry = () => new CatalogueStore(redis.client()).get(ID);
const upEvents = async () => {
  const text = await operator.metrics.registry.getSingleMetricAsString(
    'modelplane_operator_scale_events_total',
  );
  const m = text.match(/direction="up"[^\n]*\s(\d+)$/m);
  return m ? Number(m[1]) : 0;
};

describe('autoscaling on real controllers', () => {
  it('held requests on two proxies wake a model at zero with one scale-up; load grows it; idle takes it back to zero', async () => {
    await createModel(
      cp,
      chatModel('sleepy', {
        id: ID,
        engine: {
          type: 'simulator',
          minReplicas: 0,
          maxReplicas: 3,
          autoscaling: {
            targetInFlight: 2,
            scaleDownDelaySeconds: 2,
            windowSeconds: 2,
            idleSeconds: 3,
            coldStartTimeoutSeconds: 120,
          },
        },
      }),
    );
    // At zero: catalogued (listed, priced) with no endpoint, and marked for holding.
    const asleep = await waitUntil('catalogued at zero', async () => {
      const e = await entry();
      return e && e.coldStartTimeoutMs === 120_000 ? e : undefined;
    });
    expect(asleep.endpoints).toEqual([]);
    expect((await deployment()).spec?.replicas).toBe(0);

    // One held call on each proxy: summed, 2 ≤ targetInFlight, so one replica, written once.
    const held = proxies.map((p) => p.board.enter(ID, 'held'));
    // Scaled to one at once; the pod then takes kwok's engine start delay to be ready, and the
    // entry has no endpoint all that while: the held calls really wait.
    await waitUntil('scaled to 1', async () => (await readModel(cp, 'sleepy')).spec.engine?.replicas === 1);
    const scaledAt = Date.now();
    let endpointWhileStarting = false;
    const starting = setInterval(() => {
      void entry().then((e) => {
        if (Date.now() - scaledAt < ENGINE_START_DELAY_MS * 0.8)
          endpointWhileStarting ||= (e?.endpoints.length ?? 0) > 0;
      });
    }, 50);
    const awake = await waitUntil(
      'woken: a ready endpoint in the catalogue',
      async () => {
        const e = await entry();
        return e && e.endpoints.length === 1 ? e : undefined;
      },
      120_000,
    );
    clearInterval(starting);
    expect(Date.now() - scaledAt).toBeGreaterThanOrEqual(ENGINE_START_DELAY_MS * 0.8);
    expect(endpointWhileStarting).toBe(false);
    expect(awake.endpoints[0]?.url).toMatch(/^http:\/\/10\.244\./);
    expect((await readModel(cp, 'sleepy')).spec.engine?.replicas).toBe(1);
    expect(await upEvents()).toBe(1);
    for (const leave of held) leave();

    // Five in flight: ceil(5 / 2) = 3 replicas, all ready through the scheduler and kwok.
    const load = [
      ...Array.from({ length: 3 }, () => proxies[0]!.board.enter(ID, 'inFlight')),
      ...Array.from({ length: 2 }, () => proxies[1]!.board.enter(ID, 'inFlight')),
    ];
    await waitUntil(
      '3 ready replicas',
      async () => ((await deployment()).status?.readyReplicas === 3 ? true : undefined),
      120_000,
    );
    await waitUntil(
      '3 endpoints in the catalogue',
      async () => ((await entry())?.endpoints.length === 3 ? true : undefined),
      60_000,
    );
    const busy = await readModel(cp, 'sleepy');
    expect(busy.status?.autoscaling).toMatchObject({ desiredReplicas: 3, inFlight: 5, demand: 5 });
    const table = await getTable(cp, '/apis/modelplane.dev/v1alpha1/namespaces/default/models/sleepy');
    const cells = Object.fromEntries(
      table.columnDefinitions.map((c, i) => [c.name, table.rows[0]?.cells[i]]),
    );
    expect(cells).toMatchObject({ Replicas: 3, Demand: 5 });

    // Load gone: after the delay, the window and the idle period, back to zero — entry kept.
    for (const leave of load) leave();
    await waitUntil(
      'scaled to zero',
      async () => ((await deployment()).spec?.replicas === 0 ? true : undefined),
      120_000,
    );
    await waitUntil(
      'no endpoint left',
      async () => ((await entry())?.endpoints.length === 0 ? true : undefined),
      60_000,
    );
    // The status follows the catalogue in the same reconcile, written after it.
    const after = await waitUntil('Ready: ScaledToZero', async () => {
      const m = await readModel(cp, 'sleepy');
      return m.status?.conditions?.find((c) => c.type === 'Ready')?.reason === 'ScaledToZero' ? m : undefined;
    });
    expect(after.spec.engine?.replicas).toBe(0);
    expect(after.status?.autoscaling).toMatchObject({ desiredReplicas: 0, demand: 0 });
    expect((await entry())?.id).toBe(ID);
  });
});
