// Before the scaler lowers a Model's replicas, each ready engine pod gets a deletion cost from its
// calls in flight (autoscale/removal.ts decides the numbers), so the ReplicaSet controller removes
// the idlest pods and the drain (drain.ts) has the fewest streams to finish. The pods are read
// from the Model's EndpointSlices (targetRef names the pod behind each ready address); the load
// from each engine's own /metrics. A pod that does not answer keeps whatever cost it had.
import { CoreV1Api, PatchStrategy, setHeaderOptions, type V1EndpointSlice } from '@kubernetes/client-node';
import { callsInEngine } from '../autoscale/engine-load.ts';
import { deletionCosts, POD_DELETION_COST } from '../autoscale/removal.ts';
import type { KubeClient } from './client.ts';

/** Ready engine pods and the URL each serves on, from the slices. */
export function podEndpoints(slices: readonly V1EndpointSlice[]): { pod: string; url: string }[] {
  const out: { pod: string; url: string }[] = [];
  for (const slice of slices) {
    const port = (slice.ports?.find((p) => p.name === 'http') ?? slice.ports?.[0])?.port;
    if (!port) continue;
    for (const e of slice.endpoints ?? []) {
      const pod = e.targetRef?.kind === 'Pod' ? e.targetRef.name : undefined;
      const address = e.addresses[0];
      if (!pod || !address || e.conditions?.ready === false || e.conditions?.terminating === true) continue;
      const host = slice.addressType === 'IPv6' ? `[${address}]` : address;
      out.push({ pod, url: `http://${host}:${port}` });
    }
  }
  return out;
}

/** Scrapes each ready pod's load and writes its deletion cost; returns the costs written. */
export async function markDeletionCosts(
  kube: KubeClient,
  namespace: string,
  slices: readonly V1EndpointSlice[],
  load: (url: string) => Promise<number | null> = callsInEngine,
): Promise<Map<string, string>> {
  const pods = podEndpoints(slices);
  const loads = await Promise.all(pods.map(async (p) => ({ name: p.pod, load: await load(p.url) })));
  const costs = deletionCosts(loads);
  const core = kube.api(CoreV1Api);
  await Promise.all(
    [...costs].map(([name, cost]) =>
      core.patchNamespacedPod(
        { name, namespace, body: { metadata: { annotations: { [POD_DELETION_COST]: cost } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    ),
  );
  return costs;
}
