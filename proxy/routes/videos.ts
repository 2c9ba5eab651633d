// /v1/videos (VID-*, BILL-4), OpenAI's Videos API: create (JSON or multipart with an optional
// input_reference image on image-to-video models), charged seconds × price at creation
// (../calls/video-call.ts); list (newest first, cursor
// pagination), retrieve, content (302 to a signed MP4 link while it is kept), delete. Jobs are
// advanced by the fleet's video workers (../media/video-worker.ts). Another account's job is a
// 404, the same as an unknown one.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { CatalogueEntry, VideoPrice } from '../../core/catalogue/index.ts';
import { ApiError, invalidRequest } from '../../core/errors.ts';
import { type JobRecord, VideoJobs } from '../../core/jobs/video-jobs.ts';
import { zodToApiError } from '../../http/validation.ts';
import { mediaModel } from '../calls/resolve-model.ts';
import { createVideo, deleteVideo } from '../calls/video-call.ts';
import type { ProxyContext } from '../context.ts';
import { type FormFields, formFields } from '../media/form-fields.ts';
import { publicOrigin } from '../media/public-origin.ts';
import {
  acceptUploads,
  isMultipartForm,
  type SpooledFile,
  type UploadChecks,
  type UploadLimits,
} from '../media/upload-form.ts';
import { MAX_EDIT_FILE_BYTES } from '../media/upload-limits.ts';
import { referenceType } from '../media/video-reference.ts';
import { videoView } from '../media/video-view.ts';
import { videoKey } from '../media/video-worker.ts';
import { withUploadForm } from '../media/with-upload-form.ts';
import {
  videoCreateFields,
  videoCreateForm,
  videoCreateRequest,
  videoDeleted,
  videoList,
  videoListQuery,
  videoObject,
  videoParams,
} from '../schemas/media.ts';
import { commonErrors } from '../schemas/openai.ts';

/** A multipart create: one input_reference image and a few short fields. */
export const VIDEO_FORM_LIMITS: UploadLimits = {
  fileBytes: MAX_EDIT_FILE_BYTES,
  files: 1,
  fields: 16,
  fieldBytes: 64 * 1024,
  totalBytes: MAX_EDIT_FILE_BYTES + 2 * 1024 * 1024,
};

export async function videosRoutes(app: FastifyInstance, opts: { ctx: ProxyContext }) {
  const { ctx } = opts;
  const jobs = new VideoJobs(ctx.media.redis);
  acceptUploads(app);
  const notFound = (id: string) =>
    new ApiError('not_found', `No video found with id '${id}'.`, { param: 'video_id' });
  const owned = async (request: FastifyRequest): Promise<JobRecord> => {
    const { id } = request.params as { id: string };
    const job = await jobs.get(request.principal.accountId, id);
    if (job === null) throw notFound(id);
    return job;
  };

  app.post(
    '/videos',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Create a video (an asynchronous job, charged at creation)',
        tags: ['media'],
        bodyDoc: { 'application/json': videoCreateRequest, 'multipart/form-data': videoCreateForm },
        charged: true,
        response: { 200: videoObject, ...commonErrors },
      },
    },
    (request, reply) => handleCreate(ctx, jobs, request, reply),
  );
  app.get(
    '/videos',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: "The account's videos, newest first",
        tags: ['media'],
        querystring: videoListQuery,
        response: { 200: videoList, ...commonErrors },
      },
    },
    async (request) => {
      const q = request.query as { after?: string; limit?: number; order?: 'asc' | 'desc' };
      const listed = await jobs.list(request.principal.accountId, {
        after: q.after,
        limit: q.limit ?? 20,
        order: q.order ?? 'desc',
      });
      if (listed === null)
        throw invalidRequest(`after: there is no video '${q.after}' to list after.`, 'after');
      const { jobs: page, hasMore } = listed;
      const data = page.map((j) => videoView(j, request.principal.currency));
      return {
        object: 'list',
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: hasMore,
      };
    },
  );
  app.get(
    '/videos/:id',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'One video job',
        tags: ['media'],
        params: videoParams,
        response: { 200: videoObject, ...commonErrors },
      },
    },
    async (request) => videoView(await owned(request), request.principal.currency),
  );
  app.get(
    '/videos/:id/content',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'The finished MP4: 302 to a signed link that needs no key (for seven days after completion)',
        tags: ['media'],
        params: videoParams,
        response: {
          302: z.null().describe('Found: the Location header is a signed link to the MP4 that needs no key'),
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const job = await owned(request);
      if (job.status !== 'completed')
        throw new ApiError(
          'not_found',
          `Video '${job.id}' is ${job.status}; its content is available once it has completed.`,
        );
      const expiresAt = Number(job.expires_at) * 1000;
      if (!(expiresAt > Date.now()))
        throw new ApiError(
          'not_found',
          `Video '${job.id}' has expired: content is kept for seven days after completion.`,
        );
      const linkUntil = Math.min(expiresAt, Date.now() + ctx.config.MEDIA_IMAGE_TTL_MS);
      const url = await ctx.media.store.signedUrl(videoKey(job.id!), linkUntil, publicOrigin(ctx, request));
      return reply.redirect(url, 302);
    },
  );
  app.delete(
    '/videos/:id',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Delete a video and its file',
        tags: ['media'],
        params: videoParams,
        response: { 200: videoDeleted, ...commonErrors },
      },
    },
    async (request) => {
      const job = await owned(request);
      await deleteVideo(ctx, jobs, request.principal.accountId, job);
      return { id: job.id, object: 'video.deleted', deleted: true };
    },
  );
}

/**
 * POST /v1/videos, as JSON or as a multipart form with an input_reference image. A reference sent
 * to a model that cannot start from one is refused as soon as both are known, the rest unread.
 */
async function handleCreate(
  ctx: ProxyContext,
  jobs: VideoJobs,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  let model: { entry: CatalogueEntry; price: VideoPrice } | null = null;
  const resolve = (modelId: string) => {
    model ??= mediaModel(ctx.catalogue, request.principal, modelId, 'video');
    return model;
  };
  const create = (fields: FormFields, reference: SpooledFile | undefined) => {
    const parsed = videoCreateFields.safeParse(fields);
    if (!parsed.success) throw zodToApiError(parsed.error);
    const { entry, price } = resolve(parsed.data.model);
    if (reference !== undefined) refuseReference(entry);
    request.metricModel = entry.id;
    const seconds = Number(parsed.data.seconds ?? '4');
    if (!(seconds > 0 && seconds <= 120))
      throw invalidRequest('seconds must be more than 0 and at most 120.', 'seconds');
    return createVideo(ctx, request, reply, jobs, {
      entry,
      price,
      seconds,
      size: parsed.data.size ?? '720x1280',
      prompt: parsed.data.prompt,
      reference,
    });
  };
  if (isMultipartForm(request)) {
    const checks: UploadChecks = {
      // A reference sent before the model is refused the moment the model is known.
      field: (name, value, f) => {
        if (name !== 'model') return;
        const { entry } = resolve(value);
        if (f.files.length > 0) refuseReference(entry);
      },
      file: (field, part, f) => {
        if (field !== 'input_reference') throw invalidRequest(`Unexpected file field '${field}'.`, field);
        if (f.fields.model !== undefined) refuseReference(resolve(f.fields.model).entry);
        if (referenceType(part) === null)
          throw invalidRequest(
            'input_reference must be a PNG, JPEG, WebP or GIF image (by its Content-Type, or its file name where the type is application/octet-stream).',
            'input_reference',
          );
      },
    };
    return withUploadForm(
      ctx.config.PROXY_DATA_DIR,
      request,
      reply,
      { limits: VIDEO_FORM_LIMITS, checks },
      (form) => create(form.fields, form.files[0]),
    );
  }
  const body = request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw invalidRequest('The body must be a JSON object.');
  const fields = formFields();
  for (const [k, v] of Object.entries(body))
    if (typeof v === 'string' || typeof v === 'number') fields[k] = String(v);
  if ('input_reference' in body)
    throw invalidRequest(
      'input_reference is a file: send the request as multipart/form-data.',
      'input_reference',
    );
  return create(fields, undefined);
}

function refuseReference(entry: CatalogueEntry): void {
  if (!entry.capabilities.imageToVideo)
    throw invalidRequest(
      `The model '${entry.id}' cannot start from an image; remove input_reference.`,
      'input_reference',
    );
}
