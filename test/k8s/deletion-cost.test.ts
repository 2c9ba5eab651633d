// Before a scale-down the operator sets each ready engine pod's controller.kubernetes.io/
// pod-deletion-cost from its calls in flight (operator/kube/deletion-cost.ts), read from the
// engines' own /metrics, so the ReplicaSet removes the idlest first. Real kube-apiserver; the pods
// are objects only (no kubelet here), their endpoints two real simulators, one carrying three
// streams and the other one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../engines/simulator/server.ts';
import { POD_DELETION_COST } from '../../operator/autoscale/removal.ts';
import { KubeClient } from '../../operator/kube/client.ts';
import { markDeletionCosts } from '../../operator/kube/deletion-cost.ts';
import { startCluster, type TestCluster } from './cluster.ts';
import { apis, readySlice, TEST_REQUEST_TIMEOUT_MS, waitUntil } from './helpers.ts';

let cluster: TestCluster;
let sims: Simulator[];

beforeAll(async () => {
  [cluster, sims] = await Promise.all([
    startCluster(),
    Promise.all([0, 1].map(() => startSimulator({ ttftMs: 5, itlMs: 50, models: ['m'] }))),
  ]);
}, 900_000);
afterAll(async () => {
  await Promise.all([cluster?.stop(), ...(sims ?? []).map((s) => s.close())]);
});

/** `n` streams of ~10 s on `sim`, cut when the test ends. */
function streams(sim: Simulator, n: number, signal: AbortSignal): void {
  for (let i = 0; i < n; i++) {
    void fetch(`${sim.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm',
        messages: [{ role: 'user', content: `${i}` }],
        max_tokens: 200,
        stream: true,
      }),
      signal,
    })
      .then((r) => r.text())
      .catch(() => undefined);
  }
}

describe('pod deletion costs before a scale-down', () => {
  it('each ready pod costs its calls in flight; the idlest is the cheapest to delete', async () => {
    const { core, discovery } = apis(cluster);
    const pods = ['engine-busy', 'engine-idle', 'engine-gone'];
    for (const name of pods) {
      await core.createNamespacedPod({
        namespace: 'default',
        body: { metadata: { name }, spec: { containers: [{ name: 'engine', image: 'sim' }] } },
      });
    }
    // One slice per pod (each simulator has its own port); the third pod's engine is not answering.
    const slice = (pod: string, port: number) => {
      const s = readySlice('model-costs', port);
      s.metadata!.name = `model-costs-${pod}`;
      s.endpoints[0]!.targetRef = { kind: 'Pod', name: pod, namespace: 'default' };
      return s;
    };
    const slices = [
      slice('engine-busy', sims[0]!.port),
      slice('engine-idle', sims[1]!.port),
      slice('engine-gone', 1),
    ];
    for (const body of slices) await discovery.createNamespacedEndpointSlice({ namespace: 'default', body });

    const stop = new AbortController();
    try {
      streams(sims[0]!, 3, stop.signal);
      streams(sims[1]!, 1, stop.signal);
      await waitUntil(
        'the streams running',
        async () => sims[0]!.inFlight() === 3 && sims[1]!.inFlight() === 1,
      );
      const kube = new KubeClient(cluster.kubeConfig, { requestTimeoutMs: TEST_REQUEST_TIMEOUT_MS });
      const costs = await markDeletionCosts(kube, 'default', slices);
      expect(costs).toEqual(
        new Map([
          ['engine-busy', '3'],
          ['engine-idle', '1'],
        ]),
      );
      const annotation = async (name: string) =>
        (await core.readNamespacedPod({ name, namespace: 'default' })).metadata?.annotations?.[
          POD_DELETION_COST
        ];
      expect(await annotation('engine-busy')).toBe('3');
      expect(await annotation('engine-idle')).toBe('1');
      expect(await annotation('engine-gone')).toBeUndefined();
    } finally {
      stop.abort();
    }
  }, 60_000);
});
