// Weights once, the thinking half: from a Model, the fleet's cache profiles and the loader/evictor
// Jobs we observed, what should exist, what the engine pods mount, and the WeightsCached condition.
// Pure; operator/reconcile/plan.ts folds it into the Model's plan and apply.ts executes it.
//   - No cacheProfile: the engine reads the weights itself — a Hugging Face repo it downloads into
//     its scratch volume (its token by reference), or a claim mounted read-only. No Job, no condition.
//   - A cacheProfile: the profile's claim (made by us unless the admin named one), a loader Job per
//     Model, the engine Deployment held back until the Job completes (KubeAI returns early the
//     same way), then every replica mounts the same folder read-only: a second replica, a restart
//     or a rollout loads nothing. A failed Job stays failed (its pods' logs say why) until someone
//     deletes it; then it runs again, and the loader skips what is already complete.
//   - Deletion: the loader Job goes first (its pods with it), then an evictor Job removes the folder;
//     the finalizer waits for it. A failed eviction is reported and let go: files left on a volume are
//     better than a Model that cannot be deleted. So is one that cannot start (its pod refused by the
//     scheduler): it never fails by itself, and the finalizer would wait for good; the Job stays and
//     removes the folder should it start before its deadline (the folder is this Model's uid alone).
//   - The Jobs' pods are read like engine pods (fleet/pod-problems.ts): a loader the scheduler
//     refuses is Degraded with the scheduler's words at once, not "Loading" forever; and every Job
//     has a deadline (activeDeadlineSeconds), after which the Job controller fails it: LoadFailed.
import type { V1Job, V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { schedulingRefusal } from '../fleet/pod-problems.ts';
import type { FleetConfig } from '../fleet/profiles.ts';
import type { Model } from '../model/model.ts';
import { type ConditionInput, condition } from '../model/status.ts';
import type { EngineWeights } from './engine.ts';
import {
  cacheClaimFor,
  cacheClaimName,
  DEFAULT_LOADER_IMAGE,
  engineCacheMount,
  engineWeightsPath,
  evictJobFor,
  evictJobName,
  jobDeadlines,
  loadJobFor,
  loadJobName,
  sourceClaimMount,
  sourceEnv,
  UID_ANNOTATION,
} from './objects.ts';

export interface WeightsObserved {
  loadJob: V1Job | null;
  evictJob: V1Job | null;
  /** Each Job's pods (the Job controller labels them batch.kubernetes.io/job-name). */
  loadPods?: readonly V1Pod[];
  evictPods?: readonly V1Pod[];
}

export interface WeightsPlan {
  claim: V1PersistentVolumeClaim | null;
  /** Jobs to apply (server-side apply: a no-op when they exist). */
  jobs: V1Job[];
  /** Jobs to delete, with their pods before them (foreground). */
  removeJobs: string[];
  engine: EngineWeights | null;
  /** Keep the engine Deployment from being created until the weights are cached. */
  hold: boolean;
  /** On deletion: the eviction is done (or not needed) and the finalizer may come off. */
  evicted: boolean;
  condition: ConditionInput | null;
  /** Degraded=True when a Job cannot run or failed (else null: the engine's own conditions stand). */
  problem: ConditionInput | null;
  reasons: string[];
}

const jobState = (job: V1Job | null): 'absent' | 'complete' | 'failed' | 'running' => {
  if (!job) return 'absent';
  const is = (type: string) => job.status?.conditions?.some((c) => c.type === type && c.status === 'True');
  if (is('Complete')) return 'complete';
  if (is('Failed')) return 'failed';
  return 'running';
};
const failure = (job: V1Job | null) =>
  job?.status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True')?.message ??
  'the Job failed';

const none: WeightsPlan = {
  claim: null,
  jobs: [],
  removeJobs: [],
  engine: null,
  hold: false,
  evicted: true,
  condition: null,
  problem: null,
  reasons: [],
};

export function planWeights(model: Model, fleet: FleetConfig, observed: WeightsObserved): WeightsPlan {
  const weights = model.spec.engine?.weights;
  if (!weights) return none;
  const { source } = weights;
  const deleting = Boolean(model.metadata.deletionTimestamp);
  // A Job left by a deleted Model of the same name (the garbage collector or the TTL not done yet)
  // says nothing about this one: it is deleted, and this Model's own made after.
  const stale = (j: V1Job | null) =>
    j !== null && j.metadata?.annotations?.[UID_ANNOTATION] !== model.metadata.uid;
  if (weights.cacheProfile && (stale(observed.loadJob) || stale(observed.evictJob))) {
    const names = [observed.loadJob, observed.evictJob].filter(stale).map((j) => j?.metadata?.name ?? '');
    return {
      ...none,
      removeJobs: names,
      hold: true,
      evicted: false,
      reasons: [`delete ${names.join(', ')}: left by an earlier Model of this name`],
    };
  }
  const file = (dir: string) => (weights.file ? `${dir}/${weights.file}` : dir);

  if (!weights.cacheProfile) {
    if (deleting) return none;
    const mounted = sourceClaimMount(source, '/weights');
    if (mounted) {
      return {
        ...none,
        engine: {
          ref: file('/weights'),
          local: true,
          volumes: [mounted.volume],
          mounts: [mounted.mount],
          env: [],
        },
      };
    }
    // A Hugging Face repo the engine downloads itself (s3 needs a cache profile: a CRD rule).
    const hf = source.huggingFace;
    return {
      ...none,
      engine: {
        ref: hf?.repo ?? model.spec.id,
        local: false,
        ...(hf?.revision ? { revision: hf.revision } : {}),
        volumes: [],
        mounts: [],
        env: sourceEnv(source),
      },
    };
  }

  const profileName = weights.cacheProfile;
  const profile = fleet.cacheProfiles[profileName];
  if (!profile) {
    if (deleting) return none;
    const known = Object.keys(fleet.cacheProfiles);
    const message = `cache profile ${profileName} is not defined (the chart's engines.cacheProfiles has ${known.length ? known.join(', ') : 'none'})`;
    return {
      ...none,
      hold: true,
      condition: condition('WeightsCached', false, 'UnknownCacheProfile', message),
      reasons: [`${message}: no loader Job, no engine`],
    };
  }
  const namespace = model.metadata.namespace ?? 'default';
  const claimName = cacheClaimName(profileName, profile);
  const jobInput = {
    model,
    claimName,
    image: fleet.weightsLoader.image ?? DEFAULT_LOADER_IMAGE,
    podDefaults: fleet.podDefaults,
    placement: profile.loader,
  };

  if (deleting) {
    if (observed.loadJob) {
      return {
        ...none,
        removeJobs: [loadJobName(model)],
        evicted: false,
        reasons: [`delete loader Job ${loadJobName(model)} (and its pods) before evicting`],
      };
    }
    const state = jobState(observed.evictJob);
    const refused = state === 'running' ? schedulingRefusal(observed.evictPods ?? []) : null;
    if (refused) {
      return {
        ...none,
        reasons: [
          `eviction cannot start (pod ${refused.pod}: ${refused.message}); the folder stays on ${claimName}, the Model goes, and Job ${evictJobName(model)} still removes it if it starts within ${jobDeadlines(profile.loader).evict} s`,
        ],
      };
    }
    if (state === 'absent' || state === 'running') {
      return {
        ...none,
        jobs: [evictJobFor(jobInput)],
        evicted: false,
        reasons: [`evict ${engineWeightsPath(model)} from ${claimName} (Job ${evictJobName(model)})`],
      };
    }
    return {
      ...none,
      reasons: [
        state === 'complete'
          ? `weights evicted from ${claimName}`
          : `eviction failed (${failure(observed.evictJob)}); the folder stays on ${claimName}, the Model goes`,
      ],
    };
  }

  const claim = cacheClaimFor(profileName, profile, namespace);
  const mount = engineCacheMount(model, claimName);
  const engine: EngineWeights = {
    ref: file(engineWeightsPath(model)),
    local: true,
    volumes: [mount.volume],
    mounts: [mount.mount],
    // The engine must not reach for the Hub: everything it needs is in the folder.
    env: [{ name: 'HF_HUB_OFFLINE', value: '1' }],
  };
  const state = jobState(observed.loadJob);
  const job = loadJobFor(jobInput, source);
  const base = { ...none, claim, engine, jobs: state === 'absent' ? [job] : [] };
  const status = (
    cached: boolean,
    reason: string,
    message: string,
    why: string,
    degraded = false,
  ): WeightsPlan => ({
    ...base,
    hold: !cached,
    condition: condition('WeightsCached', cached, reason, message),
    problem: degraded ? condition('Degraded', true, reason, message) : null,
    reasons: [why],
  });
  const jobName = loadJobName(model);
  const refused = state === 'running' ? schedulingRefusal(observed.loadPods ?? []) : null;
  if (refused) {
    return status(
      false,
      'LoaderUnschedulable',
      `loader Job ${jobName}: ${refused.stuck} pod(s) not scheduled; pod ${refused.pod}: ${refused.message} (the cache profile's loader placement says where it may run; the Job fails after ${jobDeadlines(profile.loader).load} s)`,
      `the loader Job's pod cannot be scheduled: engines held back`,
      true,
    );
  }
  switch (state) {
    case 'complete':
      return status(
        true,
        'Cached',
        `loaded once into ${engineWeightsPath(model)} on ${claimName}`,
        `weights cached on ${claimName}: engines mount them read-only`,
      );
    case 'failed':
      return status(
        false,
        'LoadFailed',
        `loader Job ${jobName}: ${failure(observed.loadJob)}; delete the Job to retry`,
        'the loader Job failed: engines held back',
        true,
      );
    default:
      return status(
        false,
        'Loading',
        `loader Job ${jobName} copies the weights into ${engineWeightsPath(model)} on ${claimName}`,
        `${state === 'absent' ? 'create' : 'wait for'} loader Job ${jobName}: engines held back`,
      );
  }
}
