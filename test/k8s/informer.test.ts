// The operator's informer against a real API server that misbehaves: a callback that throws, the
// API server dying mid-watch, the watch's resourceVersion compacted away (410 Gone → re-list), and
// the watch's connection going silent without closing.
import type { KubernetesListObject, KubernetesObject, V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../../operator/kube/client.ts';
import { ResilientInformer } from '../../operator/kube/informer.ts';
import { compactEtcd, startCluster, type TestCluster } from './cluster.ts';
import { apis, waitUntil } from './helpers.ts';
import { startApiRelay } from './relay.ts';

/** Counts lists, so the test can see the re-list that follows a 410. */
class CountingClient extends KubeClient {
  lists = 0;
  override list<T extends KubernetesObject>(
    apiVersion: string,
    kind: string,
    namespace?: string,
    labelSelector?: string,
  ): Promise<KubernetesListObject<T>> {
    this.lists++;
    return super.list<T>(apiVersion, kind, namespace, labelSelector);
  }
}

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startCluster();
}, 900_000);
afterAll(async () => {
  await cluster?.stop();
});

/** An informer on the default namespace's ConfigMaps, retrying from 0.1 s up to 1 s. */
const configMaps = {
  name: 'configmaps',
  apiVersion: 'v1',
  kind: 'ConfigMap',
  path: '/api/v1/namespaces/default/configmaps',
  namespace: 'default',
  baseDelayMs: 100,
  maxDelayMs: 1_000,
};

describe('ResilientInformer', () => {
  it('survives a throwing callback, an API server restart and a compacted resourceVersion', async () => {
    const client = new CountingClient(cluster.kubeConfig);
    const seen = new Set<string>();
    const errors: Error[] = [];
    const informer = new ResilientInformer<V1ConfigMap>(client, {
      ...configMaps,
      onChange: (cm, event) => {
        if (cm.metadata?.name === 'boom') throw new Error('callback failed');
        seen.add(`${event}:${cm.metadata?.name}`);
      },
      onError: (err) => errors.push(err as Error),
    });
    const create = (name: string) =>
      apis(cluster).core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name } } });
    try {
      await informer.start();
      expect(informer.synced).toBe(true);
      expect(client.lists).toBe(1);

      await create('boom');
      await create('a');
      await waitUntil('add:a after a throwing callback', async () => seen.has('add:a'));
      expect(errors.some((e) => /handler failed/.test(e.message))).toBe(true);

      // Move etcd past the informer's resourceVersion, then compact while the API server is down.
      await apis(cluster).core.createNamespacedSecret({
        namespace: 'default',
        body: { metadata: { name: 's' } },
      });
      await cluster.restartApiServer(async () => {
        await compactEtcd(cluster.etcdUrl);
      });
      await waitUntil('a re-list after 410 Gone', async () => client.lists >= 2, 20_000);
      await create('b');
      await waitUntil('add:b after the restart', async () => seen.has('add:b'), 20_000);
      expect(informer.list('default').map((c) => c.metadata?.name)).toEqual(
        expect.arrayContaining(['a', 'b', 'boom']),
      );
    } finally {
      await informer.stop();
    }
  }, 60_000);
  it('a watch whose connection goes silent (no FIN, no RST) is given up and restarted on a new one', async () => {
    const relay = await startApiRelay(cluster);
    const client = new KubeClient(relay.kubeConfig, {
      requestTimeoutMs: 500,
      watchTimeoutSeconds: 1,
      watchIdleGraceMs: 500,
    });
    const seen = new Set<string>();
    const informer = new ResilientInformer<V1ConfigMap>(client, {
      ...configMaps,
      onChange: (cm, event) => seen.add(`${event}:${cm.metadata?.name}`),
    });
    const create = (name: string) =>
      apis(cluster).core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name } } });
    try {
      await informer.start();
      await create('w1');
      await waitUntil('add:w1', async () => seen.has('add:w1'));
      // The watch's connection goes silent for good; a new connection would work. Without a bound
      // the informer would wait on it forever and never hear of w2.
      relay.strand();
      await create('w2');
      await waitUntil('add:w2 over a new connection', async () => seen.has('add:w2'), 10_000);
      expect(informer.restarts).toBeGreaterThan(0);
    } finally {
      await informer.stop();
      await relay.close();
    }
  }, 30_000);
});
