// A route's multipart upload, its spool folder owned here: one folder per request under
// PROXY_DATA_DIR/uploads (the request id and a random suffix, so two replicas sharing a volume, or
// a retried id, never meet), the form read into it (./upload-form.ts), the route's use of the
// form, and the folder deleted after — whether the use succeeded or threw. The spooled files live
// exactly as long as `use` runs; nothing outside it may keep their paths.
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { readUploadForm, type UploadChecks, type UploadForm, type UploadLimits } from './upload-form.ts';

export async function withUploadForm<T>(
  dataDir: string,
  request: FastifyRequest,
  reply: FastifyReply,
  o: { limits: UploadLimits; checks?: UploadChecks },
  use: (form: UploadForm) => Promise<T>,
): Promise<T> {
  const dir = join(dataDir, 'uploads', `${request.id}-${randomBytes(4).toString('hex')}`);
  // A refused upload (a bound passed, a route check) has its folder deleted by readUploadForm.
  const form = await readUploadForm(request, reply, { dir, limits: o.limits, checks: o.checks });
  try {
    return await use(form);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
