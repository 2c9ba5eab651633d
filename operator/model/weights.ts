// Where a Model's weights come from and where they are kept (spec.engine.weights); the CRD's schema
// is generated from this one (operator/model/crd/). A source is one of a Hugging Face repo, a
// PersistentVolumeClaim or S3-compatible storage; credentials are Secret references only, so a
// token never sits in the Model. A cache profile (the chart's engines.cacheProfiles) makes one
// loader Job copy the weights once onto a shared volume that every engine pod mounts read-only.
import { z } from 'zod';

const secretKey = (description: string) =>
  z
    .strictObject({
      name: z.string().min(1).max(253),
      key: z.string().min(1).max(253),
    })
    .describe(description);

/** A DNS-label-like profile name, as the chart's cacheProfiles keys are. */
export const CACHE_PROFILE_PATTERN = '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$';
/** A relative path inside a volume: no leading slash, no `..` segment. */
export const RELATIVE_PATH_PATTERN = '^[A-Za-z0-9._-][A-Za-z0-9._/-]*$';
export const S3_URL_PATTERN = '^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$';

export const weightsSourceSchema = z
  .strictObject({
    huggingFace: z
      .strictObject({
        repo: z
          .string()
          .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/)
          .max(256),
        revision: z.string().min(1).max(128).describe('Branch, tag or commit (default main).').optional(),
        tokenSecret: secretKey('HF_TOKEN from this Secret key, for gated or private repos.').optional(),
      })
      .optional(),
    pvc: z
      .strictObject({
        claimName: z.string().min(1).max(253),
        path: z
          .string()
          .regex(new RegExp(RELATIVE_PATH_PATTERN))
          .max(1024)
          .describe('Folder inside the claim.')
          .optional(),
      })
      .optional(),
    s3: z
      .strictObject({
        url: z.string().regex(new RegExp(S3_URL_PATTERN)).max(2048).describe('s3://bucket/prefix'),
        endpoint: z
          .string()
          .regex(/^https?:\/\//)
          .max(2048)
          .describe('An S3-compatible endpoint (MinIO, Ceph, R2); unset: AWS.')
          .optional(),
        region: z.string().min(1).max(64).optional(),
        credentialsSecret: z
          .strictObject({ name: z.string().min(1).max(253) })
          .describe('A Secret with keys accessKeyId and secretAccessKey.'),
      })
      .optional(),
  })
  .describe('Exactly one of huggingFace, pvc, s3.');
export type WeightsSource = z.infer<typeof weightsSourceSchema>;

export const weightsSpecSchema = z
  .strictObject({
    source: weightsSourceSchema,
    cacheProfile: z
      .string()
      .regex(new RegExp(CACHE_PROFILE_PATTERN))
      .max(63)
      .describe('A profile of the chart values engines.cacheProfiles: load once onto its shared volume.')
      .optional(),
    file: z
      .string()
      .regex(new RegExp(RELATIVE_PATH_PATTERN))
      .max(1024)
      .describe('The file the engine opens inside the weights (llama.cpp’s GGUF).')
      .optional(),
  })
  .describe(
    'Where the weights come from; with cacheProfile a loader Job copies them once onto the profile’s shared volume, mounted read-only by every engine pod. Immutable.',
  );
export type WeightsSpec = z.infer<typeof weightsSpecSchema>;

export type SourceKind = 'huggingFace' | 'pvc' | 's3';
export function sourceKind(source: WeightsSource): SourceKind | undefined {
  if (source.huggingFace) return 'huggingFace';
  if (source.pvc) return 'pvc';
  if (source.s3) return 's3';
  return undefined;
}
