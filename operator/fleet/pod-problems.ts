// What keeps a Model's pods from running, as a Degraded condition the admin sees at once in
// `kubectl get/describe model` (issue 36: before, an unschedulable pod read "no problems seen" until
// the Deployment's progress deadline, 10 minutes later). The scheduler's own reason and message are
// copied: "0/3 nodes are available: 3 node(s) had untolerated taint {nvidia.com/gpu: present}".
// Engine pods and the weights Jobs' pods (loader, evictor: operator/weights/plan.ts) are read alike.
import type { V1Pod } from '@kubernetes/client-node';
import { type ConditionInput, condition } from '../model/status.ts';
import type { PlacementResult } from './placement.ts';

/** The scheduler refused some of these pods: how many, and its words on the first by name. */
export interface SchedulingRefusal {
  reason: string;
  stuck: number;
  pod: string;
  message: string;
}

const refused = (p: V1Pod) =>
  p.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');

/** The scheduler's verdict on pods it could not place (pods being deleted are past caring), or null. */
export function schedulingRefusal(pods: readonly V1Pod[]): SchedulingRefusal | null {
  const stuck = pods
    .filter((p) => !p.metadata?.deletionTimestamp && refused(p))
    .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  const first = stuck[0];
  if (!first) return null;
  const verdict = refused(first)!;
  return {
    reason: verdict.reason ?? 'Unschedulable',
    stuck: stuck.length,
    pod: first.metadata?.name ?? '',
    message: verdict.message ?? 'no reason given',
  };
}

/** The first problem of the engine pods worth an admin's attention, or null. */
export function placementProblem(
  placed: PlacementResult | undefined,
  pods: readonly V1Pod[],
): ConditionInput | null {
  if (placed && !placed.ok) return condition('Degraded', true, placed.reason, placed.message);
  const r = schedulingRefusal(pods);
  if (!r) return null;
  return condition(
    'Degraded',
    true,
    r.reason,
    `${r.stuck} engine pod(s) not scheduled; pod ${r.pod}: ${r.message}`,
  );
}
