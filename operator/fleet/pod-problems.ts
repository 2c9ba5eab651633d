// What keeps a Model's engine pods from running, as a Degraded condition the admin sees at once in
// `kubectl get/describe model` (issue 36: before, an unschedulable pod read "no problems seen" until
// the Deployment's progress deadline, 10 minutes later). The scheduler's own reason and message are
// copied: "0/3 nodes are available: 3 node(s) had untolerated taint {nvidia.com/gpu: present}".
import type { V1Pod } from '@kubernetes/client-node';
import { type ConditionInput, condition } from '../model/status.ts';
import type { PlacementResult } from './placement.ts';

/** The first problem worth an admin's attention, or null. Pods being deleted are past caring. */
export function placementProblem(
  placed: PlacementResult | undefined,
  pods: readonly V1Pod[],
): ConditionInput | null {
  if (placed && !placed.ok) return condition('Degraded', true, placed.reason, placed.message);
  const live = pods.filter((p) => !p.metadata?.deletionTimestamp);
  for (const pod of [...live].sort((a, b) =>
    (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''),
  )) {
    const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    if (scheduled?.status === 'False') {
      const stuck = live.filter(
        (p) => p.status?.conditions?.find((c) => c.type === 'PodScheduled')?.status === 'False',
      ).length;
      return condition(
        'Degraded',
        true,
        scheduled.reason ?? 'Unschedulable',
        `${stuck} engine pod(s) not scheduled; pod ${pod.metadata?.name}: ${scheduled.message ?? 'no reason given'}`,
      );
    }
  }
  return null;
}
