// /v1/files, OpenAI's Files API for batches (docs/batches.md): upload a JSONL input (`purpose`
// batch, multipart, at most BATCH_FILE_MAX_BYTES and BATCH_MAX_LINES lines), list (cursor), retrieve,
// delete, and read a file's content (inputs, and the output and error files batches write, purpose
// batch_output). Files are the account's: another account's id is a 404, like an unknown one.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ApiError, invalidRequest } from '../../core/errors.ts';
import { BatchFiles, fileObject as toFileObject } from '../../core/jobs/batch-files.ts';
import { countLines, storeInputFile } from '../batches/input-file.ts';
import type { ProxyContext } from '../context.ts';
import { acceptUploads, sizeText, type UploadChecks } from '../media/upload-form.ts';
import { withUploadForm } from '../media/with-upload-form.ts';
import { fileDeleted, fileList, fileListQuery, fileObject, idParams } from '../schemas/batches.ts';
import { commonErrors, errorResponse, multipartOnly } from '../schemas/openai.ts';

const notFound = (id: string) => new ApiError('not_found', `No such File object: ${id}`, { param: 'id' });

export async function batchFilesRoutes(app: FastifyInstance, opts: { ctx: ProxyContext }) {
  const { config } = opts.ctx;
  const files = new BatchFiles(opts.ctx.media.redis, opts.ctx.media.store);
  acceptUploads(app);
  const limits = {
    fileBytes: config.BATCH_FILE_MAX_BYTES,
    files: 1,
    fields: 8,
    fieldBytes: 1024,
    totalBytes: config.BATCH_FILE_MAX_BYTES + 1024 * 1024,
  };
  const checks: UploadChecks = {
    field: (name, value) => {
      if (name === 'purpose' && value !== 'batch')
        throw invalidRequest(
          `purpose: '${value}' is not supported here; upload batch input with purpose 'batch'.`,
          'purpose',
        );
    },
    file: (field) => {
      if (field !== 'file')
        throw invalidRequest(`The form has a file in '${field}'; send it as 'file'.`, field);
    },
  };

  app.post(
    '/files',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Upload a batch input file (JSONL, purpose batch)',
        tags: ['batches'],
        consumes: ['multipart/form-data'],
        response: { 200: fileObject, ...commonErrors, ...multipartOnly },
      },
    },
    async (request, reply) => {
      if (!/^multipart\/form-data\b/i.test(request.headers['content-type'] ?? ''))
        throw new ApiError('unsupported_media_type', 'Send the file as multipart/form-data.');
      const accountId = request.principal.accountId;
      const made = await withUploadForm(
        config.PROXY_DATA_DIR,
        request,
        reply,
        { limits, checks },
        async (form) => {
          const file = form.files[0];
          if (file === undefined) throw invalidRequest("The form has no 'file'.", 'file');
          if (form.fields.purpose === undefined)
            throw invalidRequest("The form has no 'purpose'.", 'purpose');
          const lines = await countLines(file.path);
          if (lines === 0) throw invalidRequest('The file has no lines.', 'file');
          if (lines > config.BATCH_MAX_LINES)
            throw invalidRequest(
              `The file has ${lines} lines; a batch takes at most ${config.BATCH_MAX_LINES} (and ${sizeText(config.BATCH_FILE_MAX_BYTES)}).`,
              'file',
            );
          return storeInputFile(files, accountId, file);
        },
      );
      return reply.send(made);
    },
  );

  app.get(
    '/files',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: "List the account's files (cursor: after, newest first)",
        tags: ['batches'],
        querystring: fileListQuery,
        response: { 200: fileList, ...commonErrors },
      },
    },
    async (request) => {
      const q = request.query as { after?: string; limit?: number; order?: 'asc' | 'desc'; purpose?: string };
      const page = await files.list(request.principal.accountId, {
        ...(q.after === undefined ? {} : { after: q.after }),
        ...(q.purpose === undefined ? {} : { purpose: q.purpose }),
        limit: q.limit ?? 10_000,
        order: q.order ?? 'desc',
      });
      if (page === null) throw invalidRequest(`after: there is no file '${q.after}' to list after.`, 'after');
      const data = page.records.map(toFileObject);
      return {
        object: 'list' as const,
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: page.hasMore,
      };
    },
  );

  const owned = async (request: FastifyRequest) => {
    const { id } = request.params as { id: string };
    const file = await files.get(request.principal.accountId, id);
    if (file === null) throw notFound(id);
    return file;
  };

  app.get(
    '/files/:id',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Retrieve a file',
        tags: ['batches'],
        params: idParams,
        response: { 200: fileObject, ...commonErrors, 404: errorResponse.describe('No such file') },
      },
    },
    owned,
  );

  app.delete(
    '/files/:id',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Delete a file (a running batch keeps the lines it read)',
        tags: ['batches'],
        params: idParams,
        response: { 200: fileDeleted, ...commonErrors, 404: errorResponse.describe('No such file') },
      },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      if (!(await files.delete(request.principal.accountId, id))) throw notFound(id);
      return { id, object: 'file' as const, deleted: true as const };
    },
  );

  app.get(
    '/files/:id/content',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: "A file's bytes (JSONL)",
        tags: ['batches'],
        params: idParams,
        response: { 200: z.string().describe('The file (application/jsonl)'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const content = await files.content(request.principal.accountId, id);
      if (content === null) throw notFound(id);
      return reply.header('content-length', content.size).type('application/jsonl').send(content.body);
    },
  );
}
