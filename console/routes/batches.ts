// The Batches page's API (issue 35 item 5; docs/console.md "Batches"): the account's batches of both
// APIs (OpenAI's /v1/batches and Anthropic's /v1/messages/batches share one store, core/jobs/batches.ts),
// newest first, with their counts and what their lines have been charged so far; a batch's output and
// error files; and cancel, under the rule a batch's key sets (../key-permissions.ts). Cancelling here
// is the same move the API's cancel makes: no new line starts, running lines finish and are billed,
// the batch's runner writes the files and releases the rest of the hold.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { speaksMessages } from '../../core/endpoints.ts';
import { ApiError, invalidRequest } from '../../core/errors.ts';
import type { BatchFiles } from '../../core/jobs/batch-files.ts';
import { type Batches, finalStatuses } from '../../core/jobs/batches.ts';
import type { RecordFields } from '../../core/jobs/listed-records.ts';
import type { ApiKeyRecord, ApiKeys } from '../../core/keys/index.ts';
import { formatNano } from '../../core/money.ts';
import { mayCancelBatch } from '../key-permissions.ts';
import { type ActiveSession, requireSession } from '../plugins/session.ts';

const batchView = z.object({
  id: z.string(),
  api: z.enum(['openai', 'anthropic']).describe('Which API made it: /v1/batches or /v1/messages/batches'),
  endpoint: z.string().describe("The lines' endpoint, e.g. /v1/chat/completions"),
  model: z.string().nullable(),
  status: z.string().describe("OpenAI's batch status (an Anthropic batch's too: in_progress, cancelling, …)"),
  counts: z.object({
    total: z.number().int(),
    completed: z.number().int(),
    failed: z.number().int(),
    cancelled: z.number().int().describe('Lines never run: the batch was cancelled'),
    expired: z.number().int().describe('Lines never run: the 24 h window ended'),
  }),
  cost: z.string().describe("What the batch's lines have been charged so far, in the account currency"),
  currency: z.string().nullable(),
  createdAt: z.string(),
  expiresAt: z.string().nullable(),
  endedAt: z.string().nullable(),
  keyId: z.string().nullable(),
  keyName: z.string().nullable().describe('null: the key is deleted'),
  outputFile: z.boolean(),
  errorFile: z.boolean(),
  mayCancel: z
    .boolean()
    .describe('Not ended, and the signed-in user may cancel it (owners; members: their keys)'),
});

const listQuery = z.object({
  after: z.string().max(64).optional().describe("The previous page's last id"),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});
const idParams = z.object({ id: z.string().min(1).max(64) });
const fileParams = idParams.extend({ kind: z.enum(['output', 'errors']) });

const iso = (s: string | undefined) => (s ? new Date(Number(s) * 1000).toISOString() : null);
const ended = (r: RecordFields) => finalStatuses.has(r.status ?? '');

function view(r: RecordFields, key: ApiKeyRecord | null, session: ActiveSession) {
  return {
    id: r.id!,
    api: speaksMessages(r.endpoint) ? ('anthropic' as const) : ('openai' as const),
    endpoint: r.endpoint ?? '',
    model: r.model || null,
    status: r.status ?? '',
    counts: {
      total: Number(r.total ?? 0),
      completed: Number(r.completed ?? 0),
      failed: Number(r.failed ?? 0),
      cancelled: Number(r.unrun_cancelled ?? 0),
      expired: Number(r.unrun_expired ?? 0),
    },
    cost: formatNano(Number(r.charged ?? 0)),
    currency: r.currency || null,
    createdAt: iso(r.created_at)!,
    expiresAt: iso(r.expires_at),
    endedAt: iso(r.ended_at),
    keyId: r.key_id || null,
    keyName: key?.status === 'active' ? key.name : null,
    outputFile: Boolean(r.output_file_id),
    errorFile: Boolean(r.error_file_id),
    mayCancel: !ended(r) && r.status !== 'cancelling' && mayCancelBatch(session, key),
  };
}

export async function batchesRoutes(
  app: FastifyInstance,
  d: { batches: Batches; files: BatchFiles; keys: ApiKeys },
) {
  app.addHook('onRequest', requireSession);
  const account = (request: FastifyRequest) => request.session!.accountId;
  const keyOf = async (accountId: string, keyId: string | undefined) =>
    keyId ? await d.keys.get(accountId, keyId) : null;
  const owned = async (request: FastifyRequest) => {
    const { id } = request.params as { id: string };
    const record = await d.batches.get(account(request), id);
    if (record === null) throw new ApiError('not_found', `No batch '${id}' in this account.`);
    return record;
  };

  app.get(
    '/batches',
    {
      schema: {
        querystring: listQuery,
        response: { 200: z.object({ data: z.array(batchView), hasMore: z.boolean() }) },
      },
    },
    async (request) => {
      const q = request.query as z.infer<typeof listQuery>;
      const page = await d.batches.records.list(account(request), {
        after: q.after,
        limit: q.limit,
        order: 'desc',
      });
      if (page === null)
        throw invalidRequest(`after: there is no batch '${q.after}' to list after.`, 'after');
      const keys = new Map(
        (await d.keys.list(account(request), { includeDeleted: true })).map((k) => [k.id, k]),
      );
      return {
        data: page.records.map((r) => view(r, keys.get(r.key_id ?? '') ?? null, request.session!)),
        hasMore: page.hasMore,
      };
    },
  );

  app.get(
    '/batches/:id/:kind',
    {
      schema: {
        params: fileParams,
        response: { 200: z.string().describe('application/jsonl, as a download') },
      },
    },
    async (request, reply) => {
      const record = await owned(request);
      const { kind } = request.params as z.infer<typeof fileParams>;
      const fileId = kind === 'output' ? record.output_file_id : record.error_file_id;
      const content = fileId ? await d.files.content(account(request), fileId) : null;
      if (content === null)
        throw new ApiError(
          'not_found',
          ended(record)
            ? `Batch '${record.id}' has no ${kind === 'output' ? 'output' : 'error'} file.`
            : `Batch '${record.id}' has not ended: its files are written when it does.`,
        );
      return reply
        .header('content-length', content.size)
        .header('content-disposition', `attachment; filename="${record.id}-${kind}.jsonl"`)
        .type('application/jsonl')
        .send(content.body);
    },
  );

  app.post(
    '/batches/:id/cancel',
    { schema: { params: idParams, response: { 200: batchView } } },
    async (request) => {
      const record = await owned(request);
      const session = request.session!;
      const key = await keyOf(session.accountId, record.key_id);
      if (!mayCancelBatch(session, key))
        throw new ApiError(
          'forbidden',
          'Members can cancel only batches made with keys they created. Ask an owner of the account.',
        );
      const moved = await d.batches.move(
        session.accountId,
        record.id!,
        ['validating', 'in_progress'],
        'cancelling',
        {
          cancelling_at: Math.floor(Date.now() / 1000),
        },
      );
      if (!moved && record.status !== 'cancelling' && record.status !== 'cancelled')
        throw invalidRequest(`Cannot cancel a batch with status '${record.status}'.`);
      return view((await d.batches.get(session.accountId, record.id!))!, key, session);
    },
  );
}
