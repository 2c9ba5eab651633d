// POST /v1/images/edits (multipart, IMG-*): `image` or repeated `image[]` (both spellings), up to
// 10 files of at most 20 MB each, an optional `mask`, and the fields of a generation. Limits are
// decided while the body streams in: files are spooled to disk as they arrive (never all in
// memory), and a body past a limit is cut off there with a 400 naming the limit. A model that
// cannot edit is refused (400 edit_unsupported) before any file is read when the form names the
// model first, as the official SDKs do.
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import FormDataStream from 'form-data';
import type { CatalogueEntry, ImagePrice } from '../../core/catalogue/index.ts';
import { ApiError, invalidRequest } from '../../core/errors.ts';
import type { ProxyContext } from '../context.ts';
import { callEngine } from '../engine/call.ts';
import { imageEditFields, imageEditForm, imagesResponse } from '../schemas/media.ts';
import { commonErrors } from '../schemas/openai.ts';
import { zodToApiError } from '../schemas/validation.ts';
import { formFields, takeField } from './form-fields.ts';
import { runImageCall } from './images.ts';
import { mediaModel } from './resolve-model.ts';

export const MAX_EDIT_FILES = 10;
export const MAX_EDIT_FILE_BYTES = 20 * 1024 * 1024;
const FILE_FIELDS = new Set(['image', 'image[]', 'mask']);

interface Spooled {
  field: string;
  filename: string;
  mimetype: string;
  path: string;
}

export async function handleImageEdit(app: FastifyInstance, ctx: ProxyContext) {
  await app.register(multipart, {
    limits: {
      fileSize: MAX_EDIT_FILE_BYTES,
      files: MAX_EDIT_FILES + 1, // the images and a mask
      fields: 32,
      fieldSize: 128 * 1024,
      parts: 64,
    },
  });
  app.post(
    '/images/edits',
    {
      config: { dialect: 'openai' },
      // The files are streamed to disk under their own limits; this only bounds the whole body.
      bodyLimit: (MAX_EDIT_FILES + 1) * MAX_EDIT_FILE_BYTES + 1024 * 1024,
      schema: {
        summary: 'Edit images (multipart/form-data)',
        tags: ['media'],
        // Documented, not validated by fastify: the form is read as it streams (below).
        bodyDoc: { schema: imageEditForm, types: ['multipart/form-data'] },
        response: { 200: imagesResponse, ...commonErrors },
      },
    },
    (request, reply) => handleEdit(ctx, request, reply),
  );
}

async function handleEdit(ctx: ProxyContext, request: FastifyRequest, reply: FastifyReply) {
  if (!request.isMultipart())
    throw new ApiError(
      'unsupported_media_type',
      `Content-Type '${request.headers['content-type'] ?? ''}': images/edits takes multipart/form-data.`,
    );
  const dir = join(ctx.config.PROXY_DATA_DIR, 'uploads', `${request.id}-${randomBytes(4).toString('hex')}`);
  const files: Spooled[] = [];
  const fields = formFields();
  let model: { entry: CatalogueEntry; price: ImagePrice } | null = null;
  const resolve = (id: string) => {
    model ??= mediaModel(ctx.catalogue, request.principal, id, 'image');
    if (!model.entry.capabilities.edit)
      throw new ApiError(
        'edit_unsupported',
        `The model '${model.entry.id}' cannot edit images; choose an edit-capable model.`,
        {
          param: 'model',
        },
      );
    return model;
  };
  try {
    try {
      for await (const part of request.parts()) {
        if (part.type === 'field') {
          takeField(fields, part.fieldname, part.value);
          if (part.fieldname === 'model') resolve(fields.model!);
          continue;
        }
        if (!FILE_FIELDS.has(part.fieldname))
          throw invalidRequest(`Unexpected file field '${part.fieldname}'.`, part.fieldname);
        if (fields.model !== undefined) resolve(fields.model);
        const images = files.filter((f) => f.field !== 'mask').length;
        if (part.fieldname !== 'mask' && images === MAX_EDIT_FILES)
          throw invalidRequest(`At most ${MAX_EDIT_FILES} images may be edited at once.`, part.fieldname);
        if (part.fieldname === 'mask' && files.some((f) => f.field === 'mask'))
          throw invalidRequest('Only one mask may be sent.', 'mask');
        await mkdir(dir, { recursive: true });
        const path = join(dir, String(files.length));
        await pipeline(part.file, createWriteStream(path));
        files.push({
          field: part.fieldname,
          filename: part.filename || 'image.png',
          mimetype: part.mimetype,
          path,
        });
      }
    } catch (err) {
      // Past a limit the rest of the body is not read: the connection closes after the answer.
      reply.header('connection', 'close');
      throw limitError(err);
    }
    const parsed = imageEditFields.safeParse(fields);
    if (!parsed.success) throw zodToApiError(parsed.error);
    if (!files.some((f) => f.field !== 'mask'))
      throw invalidRequest("Missing required parameter: 'image'.", 'image');
    const { entry, price } = resolve(parsed.data.model);
    request.metricModel = entry.id;
    const n = parsed.data.n ?? 1;
    const multiple = files.filter((f) => f.field !== 'mask').length > 1;
    const sizes = await Promise.all(files.map(async (f) => (await stat(f.path)).size));
    // Each engine attempt streams a fresh form from the spooled files (Node streams, 1 MB reads:
    // a WHATWG FormData body cost the proxy about three times the CPU per uploaded byte).
    const form = () => {
      const fd = new FormDataStream();
      fd.append('model', entry.servedName ?? entry.id);
      fd.append('prompt', parsed.data.prompt);
      fd.append('n', String(n));
      fd.append('response_format', 'b64_json');
      if (parsed.data.size) fd.append('size', parsed.data.size);
      if (parsed.data.quality) fd.append('quality', parsed.data.quality);
      files.forEach((f, i) => {
        fd.append(
          f.field === 'mask' ? 'mask' : multiple ? 'image[]' : 'image',
          createReadStream(f.path, { highWaterMark: 1 << 20 }),
          {
            filename: f.filename,
            contentType: f.mimetype,
            knownLength: sizes[i]!,
          },
        );
      });
      const stream = new PassThrough({ highWaterMark: 1 << 20 });
      fd.on('error', (err) => stream.destroy(err));
      fd.pipe(stream);
      return { stream, contentType: fd.getHeaders()['content-type'] as string };
    };
    return await runImageCall(ctx, request, reply, {
      entry,
      price,
      n,
      format: parsed.data.response_format ?? 'url',
      call: (cancel) =>
        callEngine(ctx.engine, { entry, path: '/v1/images/edits', payload: form, cancel, tried: new Set() }),
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function limitError(err: unknown): unknown {
  const code = (err as { code?: string } | null)?.code;
  switch (code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return invalidRequest(`Each file may be at most ${MAX_EDIT_FILE_BYTES / 1024 / 1024} MB.`, 'image');
    case 'FST_FILES_LIMIT':
      return invalidRequest(`At most ${MAX_EDIT_FILES} images (and one mask) may be sent.`, 'image');
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return invalidRequest('The form has too many fields.', 'image');
    default:
      // busboy's own refusals (no boundary, a malformed part) are the client's body, not our fault.
      return err instanceof ApiError
        ? err
        : invalidRequest(`The multipart body could not be read: ${(err as Error).message}.`);
  }
}
