// A video job as the API shows it (VID-*): the stored record (core/jobs/video-jobs.ts) in the schema's shape.

import type { JobRecord, VideoStatus } from '../../core/jobs/video-jobs.ts';
import { formatNano } from '../../core/money.ts';
import type { VideoObject } from '../schemas/media.ts';

/**
 * The job as the API shows it (VID-*): nullable fields present as null; `usage` says what its
 * creation charged (the job's recorded cost, the charge's very amount; ../billing/call-cost.ts) in
 * `currency`, the account's. A failed job's refund is its own ledger entry, not a change of it.
 */
export function videoView(j: JobRecord, currency: string | null): VideoObject {
  const num = (v: string | undefined) => (v === undefined || v === '' ? null : Number(v));
  const usage =
    j.cost === undefined || j.cost === '' || currency === null
      ? {}
      : { usage: { cost: formatNano(Number(j.cost)), currency } };
  return {
    id: j.id!,
    object: 'video',
    model: j.model!,
    status: j.status as VideoStatus,
    progress: Number(j.progress ?? 0),
    created_at: Number(j.created_at),
    completed_at: num(j.completed_at),
    expires_at: num(j.expires_at),
    seconds: j.seconds!,
    size: j.size!,
    error: j.error_code ? { code: j.error_code, message: j.error_message ?? '' } : null,
    ...usage,
  };
}
