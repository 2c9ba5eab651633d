// Reconcile, the thinking half (after KubeAI's calculatePodPlan): a pure function from a Model and
// what we observed to everything that should be true, with human-readable reasons. No I/O here;
// apply.ts executes the plan and tests run it with no cluster.
import type { V1Deployment, V1EndpointSlice, V1Pod, V1Service } from '@kubernetes/client-node';
import type { NameClaim } from '../../core/catalogue/aliases.ts';
import type { CatalogueEntryInput } from '../../core/catalogue/entry.ts';
import { scalingStatus } from '../autoscale/status.ts';
import { kvEventAddresses } from '../fleet/kv-events.ts';
import { placementFor } from '../fleet/placement.ts';
import { placementProblem } from '../fleet/pod-problems.ts';
import { emptyFleet, type FleetConfig } from '../fleet/profiles.ts';
import {
  type AutoscalingStatus,
  FINALIZER,
  type Model,
  type ModelStatus,
  modelSource,
} from '../model/model.ts';
import { ownedName, selectorString } from '../model/owned.ts';
import { type ConditionInput, condition, withTransitions } from '../model/status.ts';
import { planWeights, type WeightsObserved, type WeightsPlan } from '../weights/plan.ts';
import { catalogueEntryFor, readyEndpoints } from './entry.ts';
import { deploymentFor, desiredReplicas, serviceFor } from './objects.ts';

export interface Observed {
  /** The Deployment `model-<name>` if it exists. */
  deployment: V1Deployment | null;
  serviceExists: boolean;
  /** EndpointSlices labelled kubernetes.io/service-name=model-<name>. */
  endpointSlices: readonly V1EndpointSlice[];
  /** Another Model that catalogued this id first (ids are unique case-insensitively). */
  idClaimedBy?: string | undefined;
  /** Aliases of this Model another Model holds (core/catalogue/aliases.ts takenAliases): not catalogued. */
  aliasesTaken?: readonly NameClaim[];
  /** ISO time for conditions that change now. */
  now: string;
  /** Catalogue `source` of this Model; the local runtime names the file. Default Model/<ns>/<name>. */
  source?: string;
  /** The engine pods (label modelplane.dev/model=<name>): the scheduler's verdict on each. */
  pods?: readonly V1Pod[];
  /** The scaler's newest decision for this Model (operator/autoscale/), for its status. */
  autoscaling?: { status: AutoscalingStatus; condition: ConditionInput } | undefined;
  /** The Model's loader and evictor Jobs (operator/weights/). */
  weights?: WeightsObserved;
}

export type CatalogueAction =
  | { action: 'put'; entry: CatalogueEntryInput }
  | { action: 'remove'; id: string; source: string }
  | { action: 'none' };

export interface Plan {
  finalizer: 'add' | 'remove' | 'none';
  deployment: V1Deployment | null;
  service: V1Service | null;
  /** Owned objects no longer wanted (e.g. the Model switched from engine to external). */
  remove: { kind: 'Deployment' | 'Service'; name: string }[];
  catalogue: CatalogueAction;
  /** null: leave status alone (the Model is going away). */
  status: ModelStatus | null;
  reasons: string[];
  /** The weights cache's claim and Jobs (operator/weights/plan.ts). */
  weights: WeightsPlan;
}

export function planModel(model: Model, observed: Observed, fleet: FleetConfig = emptyFleet): Plan {
  const hasFinalizer = model.metadata.finalizers?.includes(FINALIZER) ?? false;
  const source = observed.source ?? modelSource(model);
  const reasons: string[] = [];
  const remove: Plan['remove'] = [];
  const name = ownedName(model);
  const weights = planWeights(model, fleet, observed.weights ?? { loadJob: null, evictJob: null });
  reasons.push(...weights.reasons);

  if (model.metadata.deletionTimestamp) {
    reasons.push(`${source} is being deleted: remove its catalogue entry, then the finalizer`);
    return {
      weights,
      // The finalizer also waits for the weights' eviction (weights/plan.ts).
      finalizer: hasFinalizer && weights.evicted ? 'remove' : 'none',
      deployment: null,
      service: null,
      remove,
      catalogue: { action: 'remove', id: model.spec.id, source },
      status: null,
      reasons,
    };
  }

  const finalizer = hasFinalizer ? 'none' : 'add';
  if (finalizer === 'add') reasons.push(`add finalizer ${FINALIZER} so deletion cleans the catalogue`);

  const engine = model.spec.engine;
  if (!engine) {
    if (observed.deployment) remove.push({ kind: 'Deployment', name });
    if (observed.serviceExists) remove.push({ kind: 'Service', name });
    if (remove.length) reasons.push('the Model has no engine any more: delete its Deployment and Service');
  }
  const placed = engine ? placementFor(engine, fleet) : undefined;
  // An unknown profile leaves a running Deployment as it is: better the old pods than none.
  // Held back while the weights load, unless it already runs (better the old pods than none).
  const held = weights.hold && !observed.deployment;
  const deployment =
    engine && placed?.ok && !held ? deploymentFor(model, engine, placed.placement, weights.engine) : null;
  const service = engine ? serviceFor(model, engine) : null;
  if (deployment) reasons.push(`apply Deployment ${name} with ${deployment.spec?.replicas} replica(s)`);
  if (placed && !placed.ok) reasons.push(`${placed.message}: the Deployment is left as it is`);
  const wanted = engine ? desiredReplicas(engine) : 0;
  const scaling = engine ? scalingStatus(model, wanted, observed.autoscaling) : undefined;
  // The engine's pods first; while the weights load there are none, and the loader's problem shows.
  const problem = placementProblem(placed, observed.pods ?? []) ?? weights.problem ?? scaling?.problem;
  const aliasProblem = aliasConflict(observed.aliasesTaken ?? []);

  const endpoints = model.spec.external ? [model.spec.external.url] : readyEndpoints(observed.endpointSlices);
  const decision = decide(model, observed, endpoints, source);
  reasons.push(decision.reason);

  const status: ModelStatus = {
    observedGeneration: model.metadata.generation,
    replicas: observed.deployment?.status?.replicas ?? 0,
    readyReplicas: observed.deployment?.status?.readyReplicas ?? 0,
    selector: selectorString(model),
    endpoints,
    ...(scaling?.status ? { autoscaling: scaling.status } : {}),
    conditions: withTransitions(
      [
        ...decision
          .conditions(wanted)
          .map((c) => (problem && c.type === 'Degraded' && c.status === 'False' ? problem : c))
          .map((c) => (aliasProblem && c.type === 'Degraded' && c.status === 'False' ? aliasProblem : c)),
        ...(scaling?.condition ? [scaling.condition] : []),
        ...(weights.condition ? [weights.condition] : []),
      ],
      model.status?.conditions,
      observed.now,
      model.metadata.generation,
    ),
  };
  if (status.observedGeneration === undefined) delete status.observedGeneration;
  return { finalizer, deployment, service, remove, catalogue: decision.catalogue, status, reasons, weights };
}

/** Degraded=True AliasConflict naming each alias left out and who holds it (null: none). */
function aliasConflict(taken: readonly NameClaim[]): ConditionInput | null {
  if (taken.length === 0) return null;
  const each = taken.map((t) => `${t.alias} (the ${t.as} of ${t.heldBy})`).join(', ');
  return condition('Degraded', true, 'AliasConflict', `aliases not catalogued, already taken: ${each}`);
}

interface Decision {
  catalogue: CatalogueAction;
  reason: string;
  conditions(wantedReplicas: number): ConditionInput[];
}

/** Whether the model is catalogued now, and the conditions that explain it. */
function decide(model: Model, observed: Observed, endpoints: string[], source: string): Decision {
  const kv = kvEventAddresses(observed.endpointSlices, model.spec.servedName ?? model.spec.id);
  const taken = new Set((observed.aliasesTaken ?? []).map((t) => t.alias));
  const put = (): CatalogueAction => {
    const entry = catalogueEntryFor(model, endpoints, source, kv);
    if (taken.size === 0) return { action: 'put', entry };
    return { action: 'put', entry: { ...entry, aliases: entry.aliases?.filter((a) => !taken.has(a)) } };
  };
  const stable = (ready: boolean, reason: string, message: string) => () => [
    condition('Ready', ready, reason, message),
    condition('Progressing', false, 'Stable', 'nothing to roll out'),
    condition('Degraded', false, 'AsExpected', 'no problems seen'),
  ];

  if (observed.idClaimedBy) {
    const message = `id ${model.spec.id} is already catalogued by ${observed.idClaimedBy}; ids are unique case-insensitively`;
    return {
      catalogue: { action: 'none' },
      reason: message,
      conditions: () => [
        condition('Ready', false, 'DuplicateId', message),
        condition('Progressing', false, 'DuplicateId', 'waiting for the id to be free'),
        condition('Degraded', true, 'DuplicateId', message),
      ],
    };
  }
  if (model.spec.external) {
    return {
      catalogue: put(),
      reason: `catalogue ${model.spec.id} at its external endpoint`,
      conditions: stable(true, 'External', `catalogued; served by ${model.spec.external.url}`),
    };
  }
  const engineConditions = (ready: ConditionInput) => (wanted: number) => [
    ready,
    ...rollout(observed.deployment, wanted, model.metadata.generation),
  ];
  if (model.spec.availability === 'comingSoon') {
    return {
      catalogue: put(),
      reason: `catalogue ${model.spec.id} as coming soon (shown, not callable)`,
      conditions: engineConditions(
        condition('Ready', true, 'ComingSoon', 'catalogued for display; not callable until available'),
      ),
    };
  }
  if (endpoints.length > 0) {
    return {
      catalogue: put(),
      reason: `catalogue ${model.spec.id} with ${endpoints.length} ready endpoint(s)`,
      conditions: engineConditions(
        condition('Ready', true, 'EndpointsReady', `catalogued with ${endpoints.length} ready endpoint(s)`),
      ),
    };
  }
  // Catalogued with no endpoint (starting, restarting, scaled to zero): callers get a retryable
  // 500 with Retry-After, not a 404 that SDKs take for a typo (only unknown models are 404).
  return {
    catalogue: put(),
    reason: `no ready endpoint: ${model.spec.id} is catalogued, answering "retry shortly" until one is ready`,
    conditions: (wanted) =>
      engineConditions(
        wanted === 0
          ? condition(
              'Ready',
              false,
              'ScaledToZero',
              'replicas is 0; calls are answered with a retryable 500',
            )
          : condition(
              'Ready',
              false,
              'WaitingForEndpoints',
              'no ready endpoint yet; calls are answered with a retryable 500 until one is ready',
            ),
      )(wanted),
  };
}

/** Progressing and Degraded from the Deployment's own status and conditions. */
function rollout(deployment: V1Deployment | null, wanted: number, generation?: number): ConditionInput[] {
  const ready = deployment?.status?.readyReplicas ?? 0;
  const failure = deployment?.status?.conditions?.find(
    (c) =>
      (c.type === 'ReplicaFailure' && c.status === 'True') ||
      (c.type === 'Progressing' && c.status === 'False' && c.reason === 'ProgressDeadlineExceeded'),
  );
  const degraded = failure
    ? condition(
        'Degraded',
        true,
        failure.reason ?? failure.type,
        failure.message ?? 'the Deployment reports a failure',
      )
    : condition('Degraded', false, 'AsExpected', 'no problems seen');
  const settled = deployment !== null && ready === wanted && (deployment.status?.replicas ?? 0) === wanted;
  const progressing = settled
    ? condition('Progressing', false, 'Stable', `${ready}/${wanted} replicas ready`)
    : condition(
        'Progressing',
        true,
        deployment ? 'RollingOut' : 'Creating',
        `${ready}/${wanted} replicas ready${generation ? ` (generation ${generation})` : ''}`,
      );
  return [progressing, degraded];
}
