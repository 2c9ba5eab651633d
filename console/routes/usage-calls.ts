// Inference API Usage call by call (issue 23): each call the account made — by key, in a time
// range — read from the durable journal, which keeps every call forever, deleted keys included.
// Registered only when the console has a journal (DATABASE_URL); the rollups (/usage) need none.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Accounts } from '../../core/accounts.ts';
import type { Journal } from '../../core/journal/index.ts';
import type { ApiKeys } from '../../core/keys/index.ts';
import { formatNano } from '../../core/money.ts';
import { requireSession } from '../plugins/session.ts';

const DAY_MS = 86_400_000;

const callsQuery = z.object({
  from: z.coerce.number().int().min(0).optional().describe('ms since the epoch; default 30 days ago'),
  to: z.coerce.number().int().min(0).optional().describe('ms since the epoch; default now'),
  keyId: z.string().max(64).optional().describe('Only this key (View Usage)'),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

const call = z.object({
  requestId: z.string().nullable(),
  at: z.string().describe('ISO 8601'),
  type: z.enum(['charge', 'refund']),
  keyId: z.string().nullable(),
  keyName: z.string().nullable().describe('"(deleted)" appended for a deleted key'),
  model: z.string().nullable(),
  kind: z.string().nullable(),
  inputTokens: z.number().nullable(),
  cachedTokens: z.number().nullable(),
  outputTokens: z.number().nullable(),
  images: z.number().nullable(),
  videoSeconds: z.number().nullable(),
  cost: z.string().nullable().describe('The true cost, in the account currency'),
  amount: z.string().describe('What was charged (or refunded), in the account currency'),
});

export async function usageCallsRoutes(
  app: FastifyInstance,
  d: { journal: Journal; keys: ApiKeys; accounts: Accounts },
) {
  app.addHook('onRequest', requireSession);
  app.get(
    '/usage/calls',
    {
      schema: {
        summary: 'Each call (and refund), newest first, from the durable journal: kept forever',
        querystring: callsQuery,
        response: { 200: z.object({ currency: z.string().nullable(), data: z.array(call) }) },
      },
    },
    async (request) => {
      const accountId = request.session!.accountId;
      const q = request.query as z.infer<typeof callsQuery>;
      const to = q.to ?? Date.now();
      const [records, keys, account] = await Promise.all([
        d.journal.calls(accountId, {
          fromMs: q.from ?? to - 30 * DAY_MS,
          toMs: to,
          limit: q.limit,
          ...(q.keyId ? { keyId: q.keyId } : {}),
        }),
        d.keys.list(accountId, { includeDeleted: true }),
        d.accounts.get(accountId),
      ]);
      const names = new Map(keys.map((k) => [k.id, k.status === 'deleted' ? `${k.name} (deleted)` : k.name]));
      return {
        currency: account?.currency ?? null,
        data: records.map((r) => ({
          requestId: r.requestId,
          at: new Date(r.atMs).toISOString(),
          type: r.kind as 'charge' | 'refund',
          keyId: r.keyId,
          keyName: r.keyId === null ? null : (names.get(r.keyId) ?? null),
          model: r.model,
          kind: r.callKind,
          inputTokens: r.inputTokens,
          cachedTokens: r.cachedTokens,
          outputTokens: r.outputTokens,
          images: r.images,
          videoSeconds: r.videoSeconds,
          cost: r.cost === null ? null : formatNano(r.cost),
          amount: formatNano(r.amount),
        })),
      };
    },
  );
}
