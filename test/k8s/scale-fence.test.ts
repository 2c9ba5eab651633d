// The scaler's writes of `replicas` fenced by the leadership term (issue 32), on a real
// kube-apiserver + etcd: two operators, the leader's API connection hung (a relay that stops
// forwarding), the other takes over and claims the autoscaled Model for its term. The deposed
// leader's own writer refuses at once; a writer that still believes in the old term — a leader
// paused before it could notice — passes its own check on the Model it read before the handover,
// and the API server refuses its write (409 on the resourceVersion the new term's claim moved).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DemandStore } from '../../core/demand/demand.ts';
import { chatModel } from '../../operator/fixtures.ts';
import { isAlreadyExists, KubeClient } from '../../operator/kube/client.ts';
import {
  isStaleScaleTerm,
  NotLeadingScaleError,
  ScaleWriter,
  scaleFence,
  scaleTermOf,
} from '../../operator/kube/scale-fence.ts';
import type { Model } from '../../operator/model/model.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { startCluster, type TestCluster } from './cluster.ts';
import {
  createModel,
  type OperatorReplica,
  readModel,
  startOperator,
  TEST_REQUEST_TIMEOUT_MS,
  waitUntil,
} from './helpers.ts';
import { type ApiRelay, startApiRelay } from './relay.ts';

const ID = 'Acme/Fenced-Scale';
let cluster: TestCluster;
let redis: TestRedis;
const relays: ApiRelay[] = [];
const replicas: OperatorReplica[] = [];

beforeAll(async () => {
  [cluster, redis] = await Promise.all([startCluster(), startRedis()]);
}, 900_000);
afterAll(async () => {
  for (const r of replicas) await r.stop().catch(() => undefined);
  for (const r of relays) await r.close();
  await Promise.all([cluster?.stop(), redis?.stop()]);
});

async function operator(identity: string): Promise<{ op: OperatorReplica; relay: ApiRelay }> {
  const relay = await startApiRelay(cluster);
  relays.push(relay);
  const op = await startOperator(cluster, redis.client(), identity, {
    kubeConfig: relay.kubeConfig,
    demand: new DemandStore(redis.client()),
    scaleIntervalMs: 200,
  });
  replicas.push(op);
  return { op, relay };
}

const demand = (inFlight: number, held = 0) =>
  new DemandStore(redis.client()).publish('proxy-0', new Map([[ID, { inFlight, queued: 0, held }]]), 60_000);
const replicasOf = async () => (await readModel(cluster, 'scaled')).spec.engine?.replicas;

describe('the scaler’s replicas writes, fenced', () => {
  it('a deposed leader cannot scale: its writer refuses, and a write under its stale term is refused by the API server', async () => {
    const a = await operator('op-a');
    await waitUntil('op-a to lead', async () => a.op.runtime.leader.isLeader);
    const b = await operator('op-b');
    await createModel(
      cluster,
      chatModel('scaled', {
        id: ID,
        engine: {
          type: 'simulator',
          minReplicas: 0,
          maxReplicas: 3,
          autoscaling: { targetInFlight: 1, scaleDownDelaySeconds: 600, windowSeconds: 600 },
        },
      }),
    );
    await demand(0, 1);
    await waitUntil('op-a woke the model', async () => (await replicasOf()) === 1);
    const staleTerm = a.op.runtime.leader.term!;
    // Read as op-a last saw it: claimed by its term.
    const before: Model = await readModel(cluster, 'scaled');
    expect(scaleTermOf(before)).toBe(staleTerm);

    // Every replicas value the Model takes from here on, sampled.
    const seen: (number | undefined)[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const r = await replicasOf().catch(() => undefined);
        if (r !== undefined && seen.at(-1) !== r) seen.push(r);
        await new Promise((res) => setTimeout(res, 20));
      }
    })();

    a.relay.hang();
    await waitUntil('op-a to step down', async () => !a.op.runtime.leader.isLeader, 5_000);
    await waitUntil('op-b to lead', async () => b.op.runtime.leader.isLeader, 10_000);
    const newTerm = b.op.runtime.leader.term!;
    expect(newTerm).toBeGreaterThan(staleTerm);
    // op-b claims the Model for its term before it scales anything.
    await waitUntil(
      'op-b claimed the Model',
      async () => scaleTermOf(await readModel(cluster, 'scaled')) === newTerm,
    );
    expect(await replicasOf()).toBe(1);

    // op-a's own writer knows it stepped down and refuses without asking.
    await expect(a.op.runtime.scaleWriter.scale(before, 3)).rejects.toBeInstanceOf(NotLeadingScaleError);

    // A writer that still believes in op-a's term (paused before it could notice), over a
    // connection that works: on the Model it read before the handover its own check passes…
    const direct = new KubeClient(cluster.kubeConfig, { requestTimeoutMs: TEST_REQUEST_TIMEOUT_MS });
    expect(scaleFence(before, staleTerm)).toEqual({ kind: 'write' });
    // …and the API server refuses the write itself (the claim moved the resourceVersion)…
    expect(await direct.scaleModel(before, 3).catch((e: unknown) => e)).toSatisfy(isAlreadyExists);
    // …so the writer, reading again, finds the newer term and gives up.
    const deposed = new ScaleWriter(direct);
    deposed.lead(staleTerm);
    expect(await deposed.scale(before, 3).catch((e: unknown) => e)).toSatisfy(isStaleScaleTerm);
    expect(await deposed.claim(await readModel(cluster, 'scaled')).catch((e: unknown) => e)).toSatisfy(
      isStaleScaleTerm,
    );
    expect(await replicasOf()).toBe(1);

    // op-a's connection comes back: it follows. op-b scales with the load, op-a never writes.
    a.relay.resume();
    await demand(2);
    await waitUntil('op-b scaled to 2', async () => (await replicasOf()) === 2, 10_000);
    expect(a.op.runtime.leader.isLeader).toBe(false);
    await waitUntil('the sampler saw 2', async () => seen.at(-1) === 2);
    sampling = false;
    await sampler;
    expect(seen).toEqual([1, 2]);
    expect(scaleTermOf(await readModel(cluster, 'scaled'))).toBe(newTerm);
  }, 60_000);
});
