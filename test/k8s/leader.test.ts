// Leader election on a real Lease: one leader among candidates, a prompt handover when the leader
// stops cleanly, and a takeover only after the lease expires when the leader just vanishes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../../operator/kube/client.ts';
import { LeaderElector } from '../../operator/kube/leader.ts';
import { startCluster, type TestCluster } from './cluster.ts';
import { waitUntil } from './helpers.ts';

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startCluster();
}, 900_000);
afterAll(async () => {
  await cluster?.stop();
});

function candidate(identity: string) {
  const events: string[] = [];
  const elector = new LeaderElector(new KubeClient(cluster.kubeConfig, { requestTimeoutMs: 500 }), {
    namespace: 'default',
    name: 'leader-test',
    identity,
    leaseDurationSeconds: 2,
    timings: { retryMs: 100 },
    onStartedLeading: () => events.push('start'),
    onStoppedLeading: () => events.push('stop'),
  });
  return { elector, events };
}

describe('LeaderElector', () => {
  it('three candidates: exactly one leads; a crashed leader is replaced only after its lease expires', async () => {
    const all = [candidate('a'), candidate('b'), candidate('c')];
    for (const c of all) c.elector.start();
    try {
      await waitUntil('a leader', async () => all.some((c) => c.elector.isLeader));
      await new Promise((r) => setTimeout(r, 500));
      expect(all.filter((c) => c.elector.isLeader)).toHaveLength(1);

      const leader = all.find((c) => c.elector.isLeader)!;
      const rest = all.filter((c) => c !== leader);
      // Simulate a crash: stop renewing without handing the Lease back.
      const crashedAt = Date.now();
      await leader.elector.stop({ release: false });
      await waitUntil('a new leader', async () => rest.some((c) => c.elector.isLeader), 10_000);
      expect(Date.now() - crashedAt).toBeGreaterThanOrEqual(1_500);
      expect(rest.filter((c) => c.elector.isLeader)).toHaveLength(1);

      // A clean stop hands over at once.
      const second = rest.find((c) => c.elector.isLeader)!;
      const last = rest.find((c) => c !== second)!;
      const stoppedAt = Date.now();
      await second.elector.stop();
      await waitUntil('handover', async () => last.elector.isLeader, 5_000);
      expect(Date.now() - stoppedAt).toBeLessThan(1_000);
      expect(second.events).toEqual(['start', 'stop']);
    } finally {
      for (const c of all) await c.elector.stop();
    }
  }, 30_000);
});
