// Where generated media and batch files are kept (core/storage), read by the proxy (it writes them)
// and the console (its batch downloads): the store and its S3 settings, the links' origin and
// lifetimes. Listed in docs/operations.md "Configuration".
import { z } from 'zod';

export const mediaConfig = {
  // Media (images, videos). Where the files live: MEDIA_STORE and friends (core/storage).
  /** Where generated media is kept: `fs` (MEDIA_DIR; one replica or a shared volume) or `s3`. */
  MEDIA_STORE: z.enum(['fs', 's3']).default('fs'),
  /** Where the filesystem media store keeps files (MEDIA_STORE=fs). */
  MEDIA_DIR: z.string().min(1).default('.data/media'),
  /** MEDIA_STORE=s3: the bucket (required), its region, and an S3-compatible endpoint (unset: AWS). */
  S3_BUCKET: z.string().min(3).optional(),
  S3_REGION: z.string().min(1).default('us-east-1'),
  // http(s) only: `minio:9000` parses as a URL with the scheme `minio:`, and the SDK then fails
  // far from here.
  S3_ENDPOINT: z.url({ protocol: /^https?$/, error: 'an http(s) URL such as http://minio:9000' }).optional(),
  /** Unset: true when S3_ENDPOINT is set (most S3-compatible servers want path-style URLs). */
  S3_FORCE_PATH_STYLE: z
    .enum(['true', 'false', '1', '0'])
    .optional()
    .transform((v) => (v === undefined ? undefined : v === 'true' || v === '1')),
  /** Unset (both): the AWS SDK's default credential chain (environment, instance role, …). */
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** A key prefix inside the bucket, so several installs can share one. */
  S3_PREFIX: z
    .string()
    .regex(/^([a-z0-9][a-z0-9._-]*\/)*$/, 'lowercase path segments, each ending in /')
    .default(''),
  /** The proxy's public origin for links to its own /files route; unset: the request's own host. */
  PROXY_PUBLIC_URL: z.string().url().optional(),
  /** How long an image's URL (and the image) lasts. */
  MEDIA_IMAGE_TTL_MS: z.coerce.number().int().min(1_000).default(3_600_000),
  /** How long a finished video's MP4 is kept after completion (SPEC: seven days). */
  VIDEO_RETENTION_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(7 * 24 * 3_600_000),
  /** How often the fleet's one media sweeper deletes files past their time. */
  MEDIA_SWEEP_INTERVAL_MS: z.coerce.number().int().min(10).default(60_000),
};

/** What the media settings must say together (checked by every service that reads them). */
export function mediaRules(
  c: {
    MEDIA_STORE: string;
    S3_BUCKET?: string | undefined;
    S3_ACCESS_KEY_ID?: string | undefined;
    S3_SECRET_ACCESS_KEY?: string | undefined;
  },
  ctx: z.RefinementCtx,
): void {
  if (c.MEDIA_STORE === 's3' && c.S3_BUCKET === undefined)
    ctx.addIssue({ code: 'custom', path: ['S3_BUCKET'], message: 'required when MEDIA_STORE=s3' });
  if ((c.S3_ACCESS_KEY_ID === undefined) !== (c.S3_SECRET_ACCESS_KEY === undefined))
    ctx.addIssue({ code: 'custom', path: ['S3_SECRET_ACCESS_KEY'], message: 'set both S3 keys, or neither' });
}
