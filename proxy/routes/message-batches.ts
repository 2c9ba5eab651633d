// /v1/messages/batches, Anthropic's Message Batches (docs/batches.md): the same batches as
// /v1/batches (../batches/), with Anthropic's shapes — requests inline ({custom_id, params}), each
// line run as a POST /v1/messages; retrieve, list (before_id/after_id), cancel, delete once ended,
// and the results as JSONL, one line per request in input order. A request the Messages route
// would refuse fails the create with a 400 naming it, and nothing is held or charged.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { speaksMessages } from '../../core/endpoints.ts';
import { ApiError, invalidRequest } from '../../core/errors.ts';
import { newLongId } from '../../core/ids.ts';
import { BatchFiles } from '../../core/jobs/batch-files.ts';
import { Batches, finalStatuses } from '../../core/jobs/batches.ts';
import type { RecordFields } from '../../core/jobs/listed-records.ts';
import { createBatch, inputOptions } from '../batches/create.ts';
import { readBodies } from '../batches/input.ts';
import { anthropicBatch } from '../batches/output.ts';
import type { ProxyContext } from '../context.ts';
import { publicOrigin } from '../media/public-origin.ts';
import { messageBatchCreateRequest } from '../schemas/batches.ts';
import { messagesErrors } from '../schemas/messages-response.ts';

const batchView = z.object({
  id: z.string(),
  type: z.literal('message_batch'),
  processing_status: z.enum(['in_progress', 'canceling', 'ended']),
  request_counts: z.object({
    processing: z.number().int(),
    succeeded: z.number().int(),
    errored: z.number().int(),
    canceled: z.number().int(),
    expired: z.number().int(),
  }),
  ended_at: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string(),
  archived_at: z.null(),
  cancel_initiated_at: z.string().nullable(),
  results_url: z.string().nullable(),
});

const params = z.object({ id: z.string().min(1).max(64) });

const notFound = (id: string) => new ApiError('not_found', `No message batch found with id '${id}'.`);

export async function messageBatchesRoutes(app: FastifyInstance, opts: { ctx: ProxyContext }) {
  const { ctx } = opts;
  const batches = new Batches(ctx.media.redis);
  const files = new BatchFiles(ctx.media.redis, ctx.media.store);
  const view = (request: FastifyRequest, r: RecordFields) =>
    anthropicBatch(r, `${publicOrigin(ctx, request)}/v1/messages/batches/${r.id}/results`);
  const config = { dialect: 'messages' as const };

  app.post(
    '/messages/batches',
    {
      config,
      schema: {
        summary: 'Create a Message Batch (held for at once, run on idle capacity)',
        tags: ['batches'],
        body: messageBatchCreateRequest,
        response: { 200: batchView, ...messagesErrors },
      },
    },
    async (request) => {
      const body = request.body as z.infer<typeof messageBatchCreateRequest>;
      const p = request.principal;
      const envelopes = body.requests.map((r, i) => ({ line: i + 1, customId: r.custom_id, body: r.params }));
      const read = readBodies(envelopes, inputOptions(ctx, p, '/v1/messages'));
      const first = read.errors[0];
      if (first !== undefined) {
        const where = first.line === null ? '' : `requests.${first.line - 1}: `;
        throw invalidRequest(`${where}${first.message}`, first.param ?? undefined);
      }
      const record = await createBatch({ ctx, batches }, p, {
        id: newLongId('msgbatch'),
        endpoint: '/v1/messages',
        inputFileId: '',
        metadata: null,
        read,
      });
      return view(request, record);
    },
  );

  const owned = async (request: FastifyRequest) => {
    const { id } = request.params as { id: string };
    const record = await batches.get(request.principal.accountId, id);
    if (record === null || !speaksMessages(record.endpoint)) throw notFound(id);
    return record;
  };
  const one = {
    config,
    schema: { tags: ['batches'], params, response: { 200: batchView, ...messagesErrors } },
  };

  app.get('/messages/batches/:id', one, async (request) => view(request, await owned(request)));

  app.get(
    '/messages/batches',
    {
      config,
      schema: {
        summary: "List the account's Message Batches (newest first; before_id / after_id)",
        tags: ['batches'],
        querystring: z.object({
          before_id: z.string().max(64).optional(),
          after_id: z.string().max(64).optional(),
          limit: z.coerce.number().int().min(1).max(1000).optional(),
        }),
        response: {
          200: z.object({
            data: z.array(batchView),
            has_more: z.boolean(),
            first_id: z.string().nullable(),
            last_id: z.string().nullable(),
          }),
          ...messagesErrors,
        },
      },
    },
    async (request) => {
      const q = request.query as { before_id?: string; after_id?: string; limit?: number };
      const page = await batches.records.list(request.principal.accountId, {
        after: q.after_id,
        before: q.before_id,
        limit: q.limit ?? 20,
        order: 'desc',
        filter: (r) => speaksMessages(r.endpoint),
      });
      if (page === null)
        throw invalidRequest('There is no such batch to list from.', q.after_id ? 'after_id' : 'before_id');
      const data = page.records.map((r) => view(request, r));
      return {
        data,
        has_more: page.hasMore,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
      };
    },
  );

  app.post(
    '/messages/batches/:id/cancel',
    { ...one, config: { ...config, bodyless: true } },
    async (request) => {
      const record = await owned(request);
      const accountId = request.principal.accountId;
      await batches.move(accountId, record.id!, ['validating', 'in_progress'], 'cancelling', {
        cancelling_at: Math.floor(Date.now() / 1000),
      });
      return view(request, (await batches.get(accountId, record.id!))!);
    },
  );

  app.delete(
    '/messages/batches/:id',
    {
      config,
      schema: {
        tags: ['batches'],
        params,
        response: {
          200: z.object({ id: z.string(), type: z.literal('message_batch_deleted') }),
          ...messagesErrors,
        },
      },
    },
    async (request) => {
      const record = await owned(request);
      if (!finalStatuses.has(record.status ?? ''))
        throw invalidRequest('A batch is deleted once it has ended; cancel it first.');
      if (record.output_file_id) await files.delete(request.principal.accountId, record.output_file_id);
      await batches.remove(request.principal.accountId, record.id!);
      return { id: record.id!, type: 'message_batch_deleted' as const };
    },
  );

  app.get(
    '/messages/batches/:id/results',
    {
      config,
      schema: {
        summary: 'The results, JSONL: one line per request, in input order',
        tags: ['batches'],
        params,
        response: { 200: z.string().describe('application/x-jsonl'), ...messagesErrors },
      },
    },
    async (request, reply) => {
      const record = await owned(request);
      const content = record.output_file_id
        ? await files.content(request.principal.accountId, record.output_file_id)
        : null;
      if (content === null)
        throw invalidRequest(`Batch '${record.id}' has not ended yet; its results come once it has.`);
      return reply.header('content-length', content.size).type('application/x-jsonl').send(content.body);
    },
  );
}
