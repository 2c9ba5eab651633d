// /v1/batches, OpenAI's Batch API (docs/batches.md): create from an uploaded input file (checked
// and held for at once, ../batches/create.ts), retrieve, list (cursor: after, newest first) and
// cancel. Lines are run by the fleet's batch runner (../batches/runner.ts). Another account's
// batch is a 404, like an unknown one.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { speaksMessages } from '../../core/endpoints.ts';
import { ApiError, invalidRequest } from '../../core/errors.ts';
import { newLongId } from '../../core/ids.ts';
import { BatchFiles } from '../../core/jobs/batch-files.ts';
import { Batches } from '../../core/jobs/batches.ts';
import { createBatch, inputOptions } from '../batches/create.ts';
import { readOpenAiInput } from '../batches/input.ts';
import { openAiBatch } from '../batches/output.ts';
import type { ProxyContext } from '../context.ts';
import { batchCreateRequest, batchList, batchListQuery, batchObject, idParams } from '../schemas/batches.ts';
import { commonErrors, errorResponse } from '../schemas/openai.ts';

const notFound = (id: string) =>
  new ApiError('not_found', `No batch found with id '${id}'.`, { param: 'batch_id' });

export async function batchesRoutes(app: FastifyInstance, opts: { ctx: ProxyContext }) {
  const { ctx } = opts;
  const batches = new Batches(ctx.media.redis);
  const files = new BatchFiles(ctx.media.redis, ctx.media.store);

  app.post(
    '/batches',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Create a batch from an uploaded input file (held for at once, run on idle capacity)',
        tags: ['batches'],
        body: batchCreateRequest,
        response: { 200: batchObject, ...commonErrors },
      },
    },
    async (request) => {
      const body = request.body as z.infer<typeof batchCreateRequest>;
      const p = request.principal;
      const input = await files.get(p.accountId, body.input_file_id);
      if (input === null || input.purpose !== 'batch')
        throw invalidRequest(`input_file_id: no batch input file '${body.input_file_id}'.`, 'input_file_id');
      const bytes = await files.read(p.accountId, body.input_file_id);
      if (bytes === null)
        throw invalidRequest(`input_file_id: the file '${body.input_file_id}' is gone.`, 'input_file_id');
      const read = readOpenAiInput(bytes.toString('utf8'), inputOptions(ctx, p, body.endpoint));
      const record = await createBatch({ ctx, batches }, p, {
        id: newLongId('batch'),
        endpoint: body.endpoint,
        inputFileId: body.input_file_id,
        metadata: body.metadata ?? null,
        read,
      });
      return openAiBatch(record);
    },
  );

  const owned = async (request: FastifyRequest) => {
    const { id } = request.params as { id: string };
    const record = await batches.get(request.principal.accountId, id);
    if (record === null || speaksMessages(record.endpoint)) throw notFound(id);
    return record;
  };

  app.get(
    '/batches/:id',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Retrieve a batch',
        tags: ['batches'],
        params: idParams,
        response: { 200: batchObject, ...commonErrors, 404: errorResponse.describe('No such batch') },
      },
    },
    async (request) => openAiBatch(await owned(request)),
  );

  app.get(
    '/batches',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: "List the account's batches (cursor: after, newest first)",
        tags: ['batches'],
        querystring: batchListQuery,
        response: { 200: batchList, ...commonErrors },
      },
    },
    async (request) => {
      const q = request.query as { after?: string; limit?: number };
      const page = await batches.records.list(request.principal.accountId, {
        after: q.after,
        limit: q.limit ?? 20,
        order: 'desc',
        filter: (r) => !speaksMessages(r.endpoint),
      });
      if (page === null)
        throw invalidRequest(`after: there is no batch '${q.after}' to list after.`, 'after');
      const data = page.records.map(openAiBatch);
      return {
        object: 'list' as const,
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: page.hasMore,
      };
    },
  );

  app.post(
    '/batches/:id/cancel',
    {
      config: { dialect: 'openai', bodyless: true },
      schema: {
        summary: 'Cancel a batch: no new line starts; running lines finish and are billed',
        tags: ['batches'],
        params: idParams,
        response: { 200: batchObject, ...commonErrors, 404: errorResponse.describe('No such batch') },
      },
    },
    async (request) => {
      const record = await owned(request);
      const now = Math.floor(Date.now() / 1000);
      const moved = await batches.move(
        request.principal.accountId,
        record.id!,
        ['validating', 'in_progress'],
        'cancelling',
        {
          cancelling_at: now,
        },
      );
      if (!moved && record.status !== 'cancelling' && record.status !== 'cancelled')
        throw invalidRequest(`Cannot cancel a batch with status '${record.status}'.`);
      return openAiBatch((await batches.get(request.principal.accountId, record.id!))!);
    },
  );
}
