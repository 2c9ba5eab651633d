// POST /v1/images/edits (multipart, IMG-*): `image` or repeated `image[]` (both spellings), up to
// 10 files of at most 20 MB each, an optional `mask`, and the fields of a generation. The form is
// read as it streams in (../media/upload-form.ts): files spooled to disk, never all in memory, and a
// body past a limit cut off on the byte that passes it with a 400 naming the limit. A model that
// cannot edit is refused (400 edit_unsupported) as soon as the form names it: before any file is
// read when `model` comes first (as the official SDKs send it), else the moment it arrives, the
// rest of the body unread.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CatalogueEntry, ImagePrice } from '../../core/catalogue/index.ts';
import { ApiError, invalidRequest } from '../../core/errors.ts';
import { zodToApiError } from '../../http/validation.ts';
import { editImages } from '../calls/image-call.ts';
import { mediaModel } from '../calls/resolve-model.ts';
import type { ProxyContext } from '../context.ts';
import { acceptUploads, isMultipartForm, type UploadChecks } from '../media/upload-form.ts';
import { EDIT_LIMITS, MAX_EDIT_FILES } from '../media/upload-limits.ts';
import { withUploadForm } from '../media/with-upload-form.ts';
import { imageEditFields, imageEditForm, imagesResponse } from '../schemas/media.ts';
import { commonErrors, multipartOnly } from '../schemas/openai.ts';

const FILE_FIELDS = new Set(['image', 'image[]', 'mask']);

export async function imageEditsRoutes(app: FastifyInstance, opts: { ctx: ProxyContext }) {
  const { ctx } = opts;
  acceptUploads(app);
  app.post(
    '/images/edits',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Edit images (multipart/form-data)',
        tags: ['media'],
        // Documented, not validated by fastify: the form is read as it streams (below).
        bodyDoc: { 'multipart/form-data': imageEditForm },
        charged: true,
        response: { 200: imagesResponse, ...commonErrors, ...multipartOnly },
      },
    },
    (request, reply) => handleEdit(ctx, request, reply),
  );
}

async function handleEdit(ctx: ProxyContext, request: FastifyRequest, reply: FastifyReply) {
  if (!isMultipartForm(request))
    throw new ApiError(
      'unsupported_media_type',
      `Content-Type '${request.headers['content-type'] ?? ''}': images/edits takes multipart/form-data.`,
    );
  let model: { entry: CatalogueEntry; price: ImagePrice } | null = null;
  const resolve = (id: string) => {
    model ??= mediaModel(ctx.catalogue, request.principal, id, 'image');
    if (!model.entry.capabilities.edit)
      throw new ApiError(
        'edit_unsupported',
        `The model '${model.entry.id}' cannot edit images; choose an edit-capable model.`,
        { param: 'model' },
      );
    return model;
  };
  const checks: UploadChecks = {
    field: (name, value) => {
      if (name === 'model') resolve(value);
    },
    file: (field, _part, f) => {
      if (!FILE_FIELDS.has(field)) throw invalidRequest(`Unexpected file field '${field}'.`, field);
      if (f.fields.model !== undefined) resolve(f.fields.model);
      const images = f.files.filter((s) => s.field !== 'mask').length;
      if (field !== 'mask' && images === MAX_EDIT_FILES)
        throw invalidRequest(`At most ${MAX_EDIT_FILES} images may be edited at once.`, field);
      if (field === 'mask' && f.files.some((s) => s.field === 'mask'))
        throw invalidRequest('Only one mask may be sent.', 'mask');
    },
  };
  return withUploadForm(
    ctx.config.PROXY_DATA_DIR,
    request,
    reply,
    { limits: EDIT_LIMITS, checks },
    (form) => {
      const parsed = imageEditFields.safeParse(form.fields);
      if (!parsed.success) throw zodToApiError(parsed.error);
      if (!form.files.some((f) => f.field !== 'mask'))
        throw invalidRequest("Missing required parameter: 'image'.", 'image');
      const model = resolve(parsed.data.model);
      request.metricModel = model.entry.id;
      return editImages(ctx, request, reply, model, parsed.data, form.files);
    },
  );
}
