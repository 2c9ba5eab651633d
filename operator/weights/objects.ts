// The Kubernetes objects of "weights once" (after KubeAI's cache.go): the shared cache claim of a
// profile, the loader Job that copies one Model's weights onto it, the evictor Job that removes them,
// and what an engine pod mounts. Pure builders; operator/weights/plan.ts decides which are wanted.
// On the volume a Model's weights live at models/<name>-<uid>: the uid keeps a re-created Model of
// the same name from reading its predecessor's half-evicted folder.
import type {
  V1Affinity,
  V1EnvVar,
  V1Job,
  V1PersistentVolumeClaim,
  V1Toleration,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';
import type { CacheProfile, LoaderPlacement, PodDefaults } from '../fleet/profiles.ts';
import type { Model } from '../model/model.ts';
import { MANAGED_BY, ownerReference } from '../model/owned.ts';
import type { WeightsSource } from '../model/weights.ts';

/** Jobs carry this label (not the engine pods' modelplane.dev/model, which would count them as engines). */
export const WEIGHTS_LABEL = 'modelplane.dev/weights-of';
/** Which Model (by uid) a Job works for: a same-named predecessor's Job is not this Model's record. */
export const UID_ANNOTATION = 'modelplane.dev/model-uid';
export const CACHE_MOUNT = '/cache';
export const SOURCE_MOUNT = '/source';
/** Where the engine sees its weights (KubeAI's path): /models/<name>-<uid>. */
export const cacheDir = (model: Model) => `models/${model.metadata.name}-${model.metadata.uid ?? 'local'}`;
export const engineWeightsPath = (model: Model) => `/${cacheDir(model)}`;
/** ≤ 63 with a name of ≤ 57 (the CRD's name rule): a Job's name becomes a label value. */
export const loadJobName = (model: Model) => `load-${model.metadata.name}`;
export const evictJobName = (model: Model) => `evict-${model.metadata.name}`;
export const DEFAULT_LOADER_IMAGE = 'ghcr.io/modelplane/operator:dev';
/** How long a Job may run, pending included (activeDeadlineSeconds), unless the profile's loader says. */
export const DEFAULT_LOAD_DEADLINE_SECONDS = 21_600;
export const DEFAULT_EVICT_DEADLINE_SECONDS = 600;
export const jobDeadlines = (at: LoaderPlacement | undefined) => ({
  load: at?.loadDeadlineSeconds ?? DEFAULT_LOAD_DEADLINE_SECONDS,
  evict: at?.evictDeadlineSeconds ?? DEFAULT_EVICT_DEADLINE_SECONDS,
});
/** The loader in the operator's image (images/: node runs dist/, built from operator/weights/loader.ts). */
const LOADER_COMMAND = ['/usr/bin/node', '/app/dist/operator/weights/loader.js'];

/** The claim a profile's Models share in a namespace. */
export function cacheClaimName(profileName: string, profile: CacheProfile): string {
  return profile.sharedFilesystem.claimName ?? `models-cache-${profileName}`;
}

/** The claim the operator makes for a storage-class (or volume) profile; none for an admin's claim. */
export function cacheClaimFor(
  profileName: string,
  profile: CacheProfile,
  namespace: string,
): V1PersistentVolumeClaim | null {
  const fs = profile.sharedFilesystem;
  if (fs.claimName) return null;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    // Shared by every Model of the profile in the namespace: owned by none, kept when they go.
    metadata: { name: cacheClaimName(profileName, profile), namespace, labels: { ...MANAGED_BY } },
    spec: {
      accessModes: ['ReadWriteMany'],
      ...(fs.storageClassName ? { storageClassName: fs.storageClassName } : {}),
      ...(fs.persistentVolumeName ? { volumeName: fs.persistentVolumeName } : {}),
      resources: { requests: { storage: fs.size } },
    },
  };
}

/** The loader's `--from`: hf:<repo>@<revision>, dir:<path> (a mounted claim) or the s3:// URL. */
export function loaderSource(source: WeightsSource): string {
  if (source.huggingFace) return `hf:${source.huggingFace.repo}@${source.huggingFace.revision ?? 'main'}`;
  if (source.pvc) return `dir:${SOURCE_MOUNT}`;
  if (source.s3) return source.s3.url;
  throw new Error('weights source with no kind');
}

/** Credentials by reference only: the kubelet reads the Secret, the Model and the Job never hold it. */
export function sourceEnv(source: WeightsSource): V1EnvVar[] {
  const env: V1EnvVar[] = [];
  const token = source.huggingFace?.tokenSecret;
  if (token)
    env.push({ name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: token.name, key: token.key } } });
  const s3 = source.s3;
  if (s3) {
    const name = s3.credentialsSecret.name;
    env.push(
      { name: 'AWS_ACCESS_KEY_ID', valueFrom: { secretKeyRef: { name, key: 'accessKeyId' } } },
      { name: 'AWS_SECRET_ACCESS_KEY', valueFrom: { secretKeyRef: { name, key: 'secretAccessKey' } } },
    );
  }
  return env;
}

/** The source claim, mounted read-only (at `at`, its path as a subPath). */
export function sourceClaimMount(
  source: WeightsSource,
  at: string,
): { volume: V1Volume; mount: V1VolumeMount } | null {
  if (!source.pvc) return null;
  return {
    volume: {
      name: 'weights-source',
      persistentVolumeClaim: { claimName: source.pvc.claimName, readOnly: true },
    },
    mount: {
      name: 'weights-source',
      mountPath: at,
      readOnly: true,
      ...(source.pvc.path ? { subPath: source.pvc.path } : {}),
    },
  };
}

interface JobInput {
  model: Model;
  claimName: string;
  image: string;
  podDefaults: PodDefaults;
  /** The cache profile's `loader`: where its Jobs run and what they get. */
  placement?: LoaderPlacement | undefined;
}

const LOADER_RESOURCES = { requests: { cpu: '500m', memory: '512Mi' }, limits: { memory: '2Gi' } };

function job(
  input: JobInput,
  name: string,
  args: string[],
  extra: { env?: V1EnvVar[]; source?: WeightsSource; deadlineSeconds: number },
) {
  const { model } = input;
  const labels = { ...MANAGED_BY, [WEIGHTS_LABEL]: model.metadata.name };
  const sourceMount = extra.source ? sourceClaimMount(extra.source, SOURCE_MOUNT) : null;
  const d = input.podDefaults;
  const at = input.placement ?? {};
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name,
      namespace: model.metadata.namespace ?? 'default',
      labels,
      annotations: { [UID_ANNOTATION]: model.metadata.uid ?? '' },
    },
    spec: {
      backoffLimit: 4,
      // A Job whose pod is never placed (a selector no node matches) would wait forever: the Job
      // controller fails it at the deadline, so a Model's deletion and `helm uninstall` end too.
      activeDeadlineSeconds: extra.deadlineSeconds,
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: 'OnFailure',
          ...(d.serviceAccountName ? { serviceAccountName: d.serviceAccountName } : {}),
          ...(d.imagePullSecrets?.length ? { imagePullSecrets: d.imagePullSecrets } : {}),
          ...(d.securityContext ? { securityContext: d.securityContext } : {}),
          ...(at.nodeSelector ? { nodeSelector: at.nodeSelector } : {}),
          ...(at.affinity ? { affinity: at.affinity as V1Affinity } : {}),
          ...(at.tolerations ? { tolerations: at.tolerations as V1Toleration[] } : {}),
          ...(at.priorityClassName ? { priorityClassName: at.priorityClassName } : {}),
          containers: [
            {
              name: 'loader',
              image: input.image,
              command: LOADER_COMMAND,
              args,
              ...(extra.env?.length ? { env: extra.env } : {}),
              resources: {
                requests: { ...LOADER_RESOURCES.requests, ...at.requests },
                limits: { ...LOADER_RESOURCES.limits, ...at.limits },
              },
              volumeMounts: [
                { name: 'cache', mountPath: CACHE_MOUNT },
                ...(sourceMount ? [sourceMount.mount] : []),
              ],
            },
          ],
          volumes: [
            { name: 'cache', persistentVolumeClaim: { claimName: input.claimName } },
            ...(sourceMount ? [sourceMount.volume] : []),
          ],
        },
      },
    },
  } satisfies V1Job;
}

/** Copies the weights once into models/<name>-<uid> (the loader writes aside and renames). Owned by the Model. */
export function loadJobFor(input: JobInput, source: WeightsSource): V1Job {
  const args = ['load', '--from', loaderSource(source), '--to', `${CACHE_MOUNT}/${cacheDir(input.model)}`];
  if (source.s3?.endpoint) args.push('--endpoint', source.s3.endpoint);
  if (source.s3?.region) args.push('--region', source.s3.region);
  const made = job(input, loadJobName(input.model), args, {
    env: sourceEnv(source),
    source,
    deadlineSeconds: jobDeadlines(input.placement).load,
  });
  made.metadata = {
    ...made.metadata,
    ownerReferences: [ownerReference(input.model)],
  } as typeof made.metadata;
  return made;
}

/**
 * Removes the weights when the Model goes. Not owned by the Model (the garbage collector would
 * delete it with its owner, before it ran); the TTL controller removes it an hour after it ends.
 */
export function evictJobFor(input: JobInput): V1Job {
  const made = job(
    input,
    evictJobName(input.model),
    ['evict', '--dir', `${CACHE_MOUNT}/${cacheDir(input.model)}`],
    { deadlineSeconds: jobDeadlines(input.placement).evict },
  );
  return { ...made, spec: { ...made.spec, ttlSecondsAfterFinished: 3600 } };
}

/** The profile's volume as the engine pod sees it: only this Model's folder, read-only. */
export function engineCacheMount(
  model: Model,
  claimName: string,
): { volume: V1Volume; mount: V1VolumeMount } {
  return {
    volume: { name: 'weights', persistentVolumeClaim: { claimName, readOnly: true } },
    mount: { name: 'weights', mountPath: engineWeightsPath(model), subPath: cacheDir(model), readOnly: true },
  };
}
