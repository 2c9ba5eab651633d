// Shared by the operator's integration tests: typed API clients over the test cluster, a poller,
// and an operator replica wired to a real Redis.

import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  type KubeConfig,
  type V1EndpointSlice,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { Agent } from 'undici';
import { FencedCatalogue } from '../../core/catalogue/fence.ts';
import { CatalogueStore } from '../../core/catalogue/store.ts';
import type { DemandStore } from '../../core/demand/demand.ts';
import type { Redis } from '../../core/redis/client.ts';
import type { FleetConfig } from '../../operator/fleet/profiles.ts';
import { KubeClient } from '../../operator/kube/client.ts';
import { KubernetesRuntime } from '../../operator/kube/runtime.ts';
import { OperatorMetrics } from '../../operator/metrics.ts';
import { GROUP, type Model, PLURAL, VERSION } from '../../operator/model/model.ts';
import { MANAGED_BY } from '../../operator/model/owned.ts';
import { CatalogueWriter } from '../../operator/runtime/catalogue-writer.ts';
import type { TestCluster } from './cluster.ts';

export function apis(cluster: TestCluster) {
  const kc = cluster.kubeConfig;
  return {
    custom: kc.makeApiClient(CustomObjectsApi),
    apps: kc.makeApiClient(AppsV1Api),
    core: kc.makeApiClient(CoreV1Api),
    discovery: kc.makeApiClient(DiscoveryV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
  };
}

export const modelRef = (name: string) => ({
  group: GROUP,
  version: VERSION,
  plural: PLURAL,
  namespace: 'default',
  name,
});

export async function createModel(cluster: TestCluster, model: Model): Promise<Model> {
  const { custom } = apis(cluster);
  const { group, version, plural, namespace } = modelRef(model.metadata.name);
  return (await custom.createNamespacedCustomObject({
    group,
    version,
    plural,
    namespace,
    body: model,
  })) as Model;
}

export async function readModel(cluster: TestCluster, name: string): Promise<Model> {
  return (await apis(cluster).custom.getNamespacedCustomObject(modelRef(name))) as Model;
}

/**
 * What the endpointslice controller would write for ready pods (there is no kubelet here). The API
 * server refuses loopback IPs in IPv4 slices, and tests send traffic only to loopback, so the test
 * slice is of type FQDN naming the loopback simulator; the operator reads every address type alike.
 */
export function readySlice(service: string, port: number, address = '127.0.0.1'): V1EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${service}-test`,
      namespace: 'default',
      // The controller copies the Service's labels (our managed-by among them) onto its slices.
      labels: { ...MANAGED_BY, 'kubernetes.io/service-name': service },
    },
    addressType: 'FQDN',
    endpoints: [{ addresses: [address], conditions: { ready: true } }],
    ports: [{ name: 'http', port, protocol: 'TCP' }],
  };
}

export async function waitUntil<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`, { cause: lastError });
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A raw API answer's body, or an error with its status and text. */
export const json = async <T>(r: Response): Promise<T> => {
  if (!r.ok) throw new Error(`${r.status} ${await r.text()}`);
  return (await r.json()) as T;
};

/** GET as `kubectl get` does: the server renders the CRD's printer columns as a Table. */
export async function getTable(cluster: TestCluster, path: string) {
  const res = await fetch(`${cluster.server}${path}`, {
    headers: {
      authorization: `Bearer ${cluster.token}`,
      accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
    },
    dispatcher: new Agent({ connect: { ca: cluster.ca } }),
  } as RequestInit);
  return (await res.json()) as { columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] };
}

/**
 * The operator's timings scaled down for tests, keeping client-go's ratios: a 2 s lease, a 1.33 s
 * renew deadline, a 0.5 s request timeout, a 0.2 s retry period (15 s, 10 s, 3.75 s, 2 s in production).
 */
export const TEST_LEASE = { leaseDurationSeconds: 2, timings: { retryMs: 200 } } as const;
export const TEST_REQUEST_TIMEOUT_MS = 500;

export interface OperatorReplica {
  runtime: KubernetesRuntime;
  metrics: OperatorMetrics;
  /** The writer the runtime writes the catalogue through (fenced by its leadership term). */
  catalogue: CatalogueWriter;
  stop(): Promise<void>;
}

export interface OperatorReplicaOptions {
  /** Another way to the API server (a relay the test can hang); the cluster's own by default. */
  kubeConfig?: KubeConfig;
  resyncMs?: number;
  informerBackoff?: { baseDelayMs?: number; maxDelayMs?: number };
  /** A writer of the test's own (one that records what it writes). */
  catalogue?: CatalogueWriter;
  /** Engine profiles and pod defaults (operator/fleet/profiles.ts). */
  fleet?: FleetConfig;
  /** The proxies' published demand: the leader then scales autoscaled Models (issue 32). */
  demand?: DemandStore;
  scaleIntervalMs?: number;
}

export const fencedWriter = (redis: Redis) =>
  new CatalogueWriter(new CatalogueStore(redis), new FencedCatalogue(redis));

export async function startOperator(
  cluster: TestCluster,
  redis: Redis,
  identity: string,
  options: OperatorReplicaOptions = {},
): Promise<OperatorReplica> {
  const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent', base: { identity } });
  const catalogue = options.catalogue ?? fencedWriter(redis);
  const deps = {
    catalogue,
    log,
    ...(options.demand ? { demand: options.demand } : {}),
    ...(options.scaleIntervalMs ? { scaleIntervalMs: options.scaleIntervalMs } : {}),
  };
  const kube = new KubeClient(options.kubeConfig ?? cluster.kubeConfig, {
    requestTimeoutMs: TEST_REQUEST_TIMEOUT_MS,
  });
  const runtime = new KubernetesRuntime(kube, deps, {
    leaseNamespace: 'default',
    identity,
    ...TEST_LEASE,
    resyncMs: options.resyncMs ?? 60_000,
    ...(options.informerBackoff ? { informerBackoff: options.informerBackoff } : {}),
    ...(options.fleet ? { fleet: options.fleet } : {}),
  });
  const metrics = new OperatorMetrics(runtime);
  Object.assign(deps, { metrics });
  await runtime.start();
  return { runtime, metrics, catalogue, stop: () => runtime.stop() };
}
