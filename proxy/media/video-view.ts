// A video job as the API shows it (VID-*): the stored record (core/video-jobs.ts) in the schema's shape.
import type { JobRecord, VideoStatus } from '../../core/video-jobs.ts';
import type { VideoObject } from '../schemas/media.ts';

/** The job as the API shows it (VID-*): nullable fields present as null. */
export function videoView(j: JobRecord): VideoObject {
  const num = (v: string | undefined) => (v === undefined || v === '' ? null : Number(v));
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
  };
}
