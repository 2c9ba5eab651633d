// Where a Model's weights come from and where they are kept (spec.engine.weights), as zod sees it;
// the CRD's half is operator/crd-weights.ts. A source is one of a Hugging Face repo, a
// PersistentVolumeClaim or S3-compatible storage; credentials are Secret references only, so a
// token never sits in the Model. A cache profile (the chart's engines.cacheProfiles) makes one
// loader Job copy the weights once onto a shared volume that every engine pod mounts read-only.
import { z } from 'zod';

const secretKey = z.strictObject({
  name: z.string().min(1).max(253),
  key: z.string().min(1).max(253),
});

/** A DNS-label-like profile name, as the chart's cacheProfiles keys are. */
export const CACHE_PROFILE_PATTERN = '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$';
/** A relative path inside a volume: no leading slash, no `..` segment. */
export const RELATIVE_PATH_PATTERN = '^[A-Za-z0-9._-][A-Za-z0-9._/-]*$';
export const S3_URL_PATTERN = '^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$';

export const weightsSourceSchema = z.strictObject({
  huggingFace: z
    .strictObject({
      repo: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/),
      /** A branch, tag or commit; default main. */
      revision: z.string().min(1).max(128).optional(),
      /** HF_TOKEN from this Secret key (gated or private repos). */
      tokenSecret: secretKey.optional(),
    })
    .optional(),
  pvc: z
    .strictObject({
      claimName: z.string().min(1).max(253),
      path: z.string().regex(new RegExp(RELATIVE_PATH_PATTERN)).max(1024).optional(),
    })
    .optional(),
  s3: z
    .strictObject({
      url: z.string().regex(new RegExp(S3_URL_PATTERN)).max(2048),
      /** An S3-compatible endpoint (MinIO, Ceph, R2); unset: AWS. */
      endpoint: z
        .string()
        .regex(/^https?:\/\//)
        .max(2048)
        .optional(),
      region: z.string().min(1).max(64).optional(),
      /** A Secret with keys accessKeyId and secretAccessKey. */
      credentialsSecret: z.strictObject({ name: z.string().min(1).max(253) }),
    })
    .optional(),
});
export type WeightsSource = z.infer<typeof weightsSourceSchema>;

export const weightsSpecSchema = z.strictObject({
  source: weightsSourceSchema,
  /** A profile of the chart's engines.cacheProfiles: load once onto its shared volume. */
  cacheProfile: z.string().regex(new RegExp(CACHE_PROFILE_PATTERN)).max(63).optional(),
  /** The file the engine opens inside the weights (llama.cpp's GGUF); unset: the directory. */
  file: z.string().regex(new RegExp(RELATIVE_PATH_PATTERN)).max(1024).optional(),
});
export type WeightsSpec = z.infer<typeof weightsSpecSchema>;

export type SourceKind = 'huggingFace' | 'pvc' | 's3';
export function sourceKind(source: WeightsSource): SourceKind | undefined {
  if (source.huggingFace) return 'huggingFace';
  if (source.pvc) return 'pvc';
  if (source.s3) return 's3';
  return undefined;
}
