// A Model's `status.autoscaling` and `Scaling` condition, pure: what the reconcile writes from the
// scaler's newest decision, or from who else holds the replicas (./writers.ts). Folded into the
// Model's plan by operator/reconcile/plan.ts.
//   - writer: external — what the external writer set (spec.engine.replicas) and who it is; never
//     a decision of ours carried forward from before the switch (issue 47.9: the HPA held 2, the
//     status read ScaledDown, desiredReplicas 1).
//   - a second writer on a Model the operator scales — Scaling=False SecondWriter and Degraded, the
//     scaler stopped (issue 47.8).
//   - else the scaler's newest decision, or what the status says already (a reconcile between two
//     decisions, or a new leader's first, must not erase them).
import { type Demand, totalDemand } from '../../core/demand/demand.ts';
import type { AutoscalingStatus, Model } from '../model/model.ts';
import { type ConditionInput, condition } from '../model/status.ts';
import { CHANGE_REASONS, type ScaleDecision } from './decide.ts';
import { describeWriter, replicasWriter, secondReplicasWriter } from './writers.ts';

export interface ScalingStatus {
  status?: AutoscalingStatus;
  condition?: ConditionInput;
  /** Degraded=True: replicas have two writers. */
  problem?: ConditionInput;
}

export function scalingStatus(
  model: Model,
  current: number,
  decided: { status: AutoscalingStatus; condition: ConditionInput } | undefined,
): ScalingStatus {
  const autoscaling = model.spec.engine?.autoscaling;
  if (autoscaling === undefined) return {};
  const kept = keptTimes(model.status?.autoscaling);
  if (autoscaling.writer === 'external') {
    const w = replicasWriter(model);
    const by = w ? `last written by ${describeWriter(w)}` : 'as the Model was written';
    return {
      status: { ...kept, desiredReplicas: current, reason: 'ExternalWriter' },
      condition: condition(
        'Scaling',
        false,
        'ExternalWriter',
        `replicas ${current}, ${by}; autoscaling.writer is external, so the operator does not write them`,
      ),
    };
  }
  const other = secondReplicasWriter(model);
  if (other) {
    const message = `replicas ${current} were written by ${describeWriter(other)}, not the operator, whose autoscaling.writer this Model names: two writers undo each other, so the operator stopped writing replicas. Remove the other autoscaler (an HPA or a KEDA ScaledObject on this Model), or set autoscaling.writer: external to keep it; to hand replicas back, set spec.engine.replicas in the Model itself (kubectl edit, apply or patch; not kubectl scale)`;
    return {
      status: { ...kept, desiredReplicas: current, reason: 'SecondWriter' },
      condition: condition('Scaling', false, 'SecondWriter', message),
      problem: condition('Degraded', true, 'SecondReplicasWriter', message),
    };
  }
  if (decided) return decided;
  const previous = model.status?.conditions?.find((c) => c.type === 'Scaling');
  const stale = new Set(['ExternalWriter', 'SecondWriter']);
  // Back from external or a second writer: nothing of ours to show until the scaler's first decision.
  if (previous?.reason && stale.has(previous.reason)) return {};
  return {
    ...(model.status?.autoscaling ? { status: model.status.autoscaling } : {}),
    ...(previous
      ? {
          condition: {
            type: previous.type,
            status: previous.status,
            reason: previous.reason,
            message: previous.message,
          },
        }
      : {}),
  };
}

/** The times a new leader reads back (scaler.ts): kept whoever writes replicas meanwhile. */
function keptTimes(s: AutoscalingStatus | undefined): AutoscalingStatus {
  return {
    ...(s?.lastScaleTime ? { lastScaleTime: s.lastScaleTime } : {}),
    ...(s?.lastScaleUpTime ? { lastScaleUpTime: s.lastScaleUpTime } : {}),
    ...(s?.lastDemandTime ? { lastDemandTime: s.lastDemandTime } : {}),
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The status of one scaler decision. `Scaling` is True on the decision that writes replicas; a
 * decision that holds them (Steady, HoldingScaleDown) keeps the last change's reason and message on
 * show, False, until the next change (issue 47.9: a wake read Steady one tick, 2 s, later).
 */
export function decisionStatus(
  model: Model,
  current: number,
  demand: Demand,
  d: ScaleDecision,
  now: number,
): { status: AutoscalingStatus; condition: ConditionInput } {
  const writes = d.desired !== current;
  const lastScaleTime = writes ? iso(now) : model.status?.autoscaling?.lastScaleTime;
  const shown = CHANGE_REASONS.has(d.reason) ? d : (d.memory.lastChange ?? d);
  const status: AutoscalingStatus = {
    desiredReplicas: d.desired,
    recommendation: d.want,
    demand: totalDemand(demand),
    ...demand,
    saturated: d.saturated,
    reason: shown.reason,
    ...(lastScaleTime ? { lastScaleTime } : {}),
    ...(d.memory.lastScaleUpAt !== null ? { lastScaleUpTime: iso(d.memory.lastScaleUpAt) } : {}),
    // Whole seconds: a busy model's status is not rewritten for every millisecond of demand.
    ...(d.memory.lastDemandAt !== null
      ? { lastDemandTime: iso(Math.floor(d.memory.lastDemandAt / 1000) * 1000) }
      : {}),
  };
  return { status, condition: condition('Scaling', writes, shown.reason, shown.message) };
}
