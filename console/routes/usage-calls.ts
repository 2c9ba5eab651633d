// Inference API Usage call by call (issue 23 item 5): each call the account made — by key, in a time
// range, newest first, a page at a time — and one call by its request id with every transfer it
// caused (its charge, a void of its hold, refunds). Read from the durable journal, which keeps every
// call forever, deleted keys included, plus the stream's entries not yet archived. Without a journal
// (no DATABASE_URL) both answer 404 saying so: the rollups (/usage) are then the only usage kept.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Accounts } from '../../core/accounts/accounts.ts';
import { ApiError } from '../../core/errors.ts';
import { callPage, decodeCursor } from '../../core/journal/call-pages.ts';
import type { Journal } from '../../core/journal/index.ts';
import type { ApiKeyRecord, ApiKeys } from '../../core/keys/index.ts';
import { requestHistory } from '../../core/ledger/history.ts';
import { formatNano } from '../../core/money.ts';
import type { Redis } from '../../core/redis/client.ts';
import { type CallFact, callFacts, refusedCalls } from '../../core/usage/call-facts.ts';
import type { UsageEntry } from '../../core/usage/usage.ts';
import { requireSession } from '../plugins/session.ts';

const DAY_MS = 86_400_000;

/** The message both routes answer without a journal; the page shows it as it is. */
export const NO_JOURNAL =
  'Usage history call by call needs the durable journal: this console runs without one (DATABASE_URL is not set). Daily usage (GET /api/usage) is complete.';

const callsQuery = z.object({
  from: z.coerce.number().int().min(0).optional().describe('ms since the epoch; default 30 days before `to`'),
  to: z.coerce.number().int().min(0).optional().describe('ms since the epoch (exclusive); default now'),
  keyId: z.string().max(64).optional().describe('Only this key (View Usage)'),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: z
    .string()
    .max(400)
    .optional()
    .describe("The previous page's nextCursor: the calls after its last one"),
});

const refusedQuery = z.object({
  from: z.coerce.number().int().min(0).optional().describe('ms since the epoch; default 30 days before `to`'),
  to: z.coerce.number().int().min(0).optional().describe('ms since the epoch (exclusive); default now'),
  keyId: z.string().max(64).optional().describe('Only this key'),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

const refusal = z.object({
  requestId: z.string(),
  at: z.string().describe('ISO 8601'),
  status: z.number().describe('The HTTP status the client got'),
  code: z.string().describe("The error catalogue's code: invalid_request, insufficient_quota, …"),
  latencyMs: z.number(),
  keyId: z.string().nullable(),
  keyName: z.string().nullable(),
  model: z.string().nullable().describe('The model the request named'),
  route: z.string().describe('The API route called, e.g. /v1/chat/completions'),
  cost: z.literal('0').describe('A refused call is never charged'),
});

/** A query's range: to defaults to now, from to 30 days before it; from after to is refused. */
function rangeOf(q: { from?: number | undefined; to?: number | undefined }): { from: number; to: number } {
  const to = q.to ?? Date.now();
  const from = q.from ?? to - 30 * DAY_MS;
  if (from > to) throw new ApiError('invalid_request', '`from` must not be after `to`', { param: 'from' });
  return { from, to };
}

const requestParams = z.object({
  requestId: z
    .string()
    .regex(/^[A-Za-z0-9._:-]{1,128}$/, 'a request id such as req_0123456789abcdef01234567')
    .describe("The call's request id (X-Request-Id), or a video job's id"),
});

const transfer = z.object({
  id: z.string().describe('The transfer id: settle:<request id>, refund:<id>, void:<request id>, …'),
  requestId: z.string().nullable(),
  at: z.string().describe('ISO 8601'),
  type: z.enum(['charge', 'refund', 'void', 'topup']),
  keyId: z.string().nullable(),
  keyName: z.string().nullable(),
  keyState: z
    .enum(['active', 'rotated', 'deleted'])
    .nullable()
    .describe('deleted: the key is deleted now; rotated: the call used a secret since rotated away'),
  model: z.string().nullable(),
  kind: z.string().nullable(),
  inputTokens: z.number().nullable(),
  cachedTokens: z.number().nullable(),
  outputTokens: z.number().nullable(),
  images: z.number().nullable(),
  videoSeconds: z.number().nullable(),
  cost: z.string().nullable().describe('The true cost, in the account currency'),
  amount: z
    .string()
    .describe('What was charged, refunded or (void) given back from the hold, in the account currency'),
  currency: z.string().nullable(),
  refundOf: z.string().nullable().describe('Refunds: the transfer id of the charge refunded'),
  reason: z.string().nullable().describe('Voids: why the hold was given back'),
  status: z
    .number()
    .nullable()
    .describe('Charges: the HTTP status the client got (499: it left first); null when not kept (30 days)'),
  latencyMs: z.number().nullable().describe('Charges: from the request to the end of its response'),
  ttftMs: z.number().nullable().describe('Streams: from the request to its first token'),
  finishReason: z.string().nullable().describe("The engine's finish_reason: stop, length, tool_calls, …"),
});
type Transfer = z.infer<typeof transfer>;

export async function usageCallsRoutes(
  app: FastifyInstance,
  d: { redis: Redis; journal: Journal | undefined; keys: ApiKeys; accounts: Accounts },
) {
  app.addHook('onRequest', requireSession);

  /** The journal, or the 404 that says the page needs it. */
  const journalOrRefuse = (): Journal => {
    if (d.journal === undefined) throw new ApiError('not_found', NO_JOURNAL);
    return d.journal;
  };

  /** The account's keys (deleted ones too) and currency, to name each call's key as it is now. */
  async function viewer(
    accountId: string,
  ): Promise<{ currency: string | null; view: (e: UsageEntry, fact?: CallFact) => Transfer }> {
    const [keys, account] = await Promise.all([
      d.keys.list(accountId, { includeDeleted: true }),
      d.accounts.get(accountId),
    ]);
    const byId = new Map<string, ApiKeyRecord>(keys.map((k) => [k.id, k]));
    const currency = account?.currency ?? null;
    const view = (e: UsageEntry, fact?: CallFact): Transfer => {
      const key = e.keyId === null ? undefined : byId.get(e.keyId);
      const rotatedSince = key?.rotatedAt != null && Date.parse(key.rotatedAt) > e.atMs;
      return {
        id: e.opId,
        requestId: e.requestId,
        at: new Date(e.atMs).toISOString(),
        type: e.type,
        keyId: e.keyId,
        keyName: key?.name ?? null,
        keyState:
          key === undefined
            ? null
            : key.status === 'deleted'
              ? 'deleted'
              : rotatedSince
                ? 'rotated'
                : 'active',
        model: e.model,
        kind: e.kind,
        inputTokens: e.inputTokens,
        cachedTokens: e.cachedTokens,
        outputTokens: e.outputTokens,
        images: e.images,
        videoSeconds: e.videoSeconds,
        cost: e.cost === null ? null : formatNano(e.cost),
        amount: formatNano(e.amount),
        currency,
        refundOf: e.refundOf,
        reason: e.reason,
        status: fact?.status ?? null,
        latencyMs: fact?.latencyMs ?? null,
        ttftMs: fact?.ttftMs ?? null,
        finishReason: fact?.finishReason ?? null,
      };
    };
    return { currency, view };
  }

  app.get(
    '/usage/calls',
    {
      schema: {
        summary:
          'Each call (and refund), newest first, a page at a time, from the durable journal: kept forever',
        querystring: callsQuery,
        response: {
          200: z.object({
            currency: z.string().nullable(),
            data: z.array(transfer),
            nextCursor: z
              .string()
              .nullable()
              .describe('Pass as `cursor` for the next (older) page; null at the end'),
          }),
        },
      },
    },
    async (request) => {
      const journal = journalOrRefuse();
      const accountId = request.session!.accountId;
      const q = request.query as z.infer<typeof callsQuery>;
      const { from, to } = rangeOf(q);
      const cursor = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
      if (cursor === null)
        throw new ApiError(
          'invalid_request',
          '`cursor` is not one this API gave: pass nextCursor as it came',
          {
            param: 'cursor',
          },
        );
      const [page, { currency, view }] = await Promise.all([
        callPage(d.redis, journal, {
          accountId,
          fromMs: from,
          toMs: to,
          limit: q.limit,
          ...(q.keyId ? { keyId: q.keyId } : {}),
          ...(cursor ? { cursor } : {}),
        }),
        viewer(accountId),
      ]);
      const facts = await factsOf(accountId, page.entries);
      return {
        currency,
        data: page.entries.map((e) => view(e, factOf(facts, e))),
        nextCursor: page.next,
      };
    },
  );

  /** The facts (status, latency, …) kept of these entries' calls (core/usage/call-facts.ts). */
  const factsOf = (accountId: string, entries: readonly UsageEntry[]) =>
    callFacts(
      d.redis,
      accountId,
      entries.flatMap((e) => (e.type === 'charge' && e.requestId !== null ? [e.requestId] : [])),
    );
  const factOf = (facts: Map<string, CallFact>, e: UsageEntry) =>
    e.type === 'charge' && e.requestId !== null ? facts.get(e.requestId) : undefined;

  app.get(
    '/usage/refused',
    {
      schema: {
        summary:
          'Calls refused at the door (an error status once the key was known), newest first: never charged; the newest ~1000 of 30 days are kept',
        querystring: refusedQuery,
        response: { 200: z.object({ data: z.array(refusal) }) },
      },
    },
    async (request) => {
      const accountId = request.session!.accountId;
      const q = request.query as z.infer<typeof refusedQuery>;
      const { from, to } = rangeOf(q);
      const [found, keys] = await Promise.all([
        refusedCalls(d.redis, accountId, {
          fromMs: from,
          toMs: to,
          limit: q.limit,
          ...(q.keyId ? { keyId: q.keyId } : {}),
        }),
        d.keys.list(accountId, { includeDeleted: true }),
      ]);
      const names = new Map(keys.map((k) => [k.id, k.name]));
      return {
        data: found.map((r) => ({
          requestId: r.requestId,
          at: new Date(r.atMs).toISOString(),
          status: r.status,
          code: r.code,
          latencyMs: r.latencyMs,
          keyId: r.keyId,
          keyName: r.keyId === null ? null : (names.get(r.keyId) ?? null),
          model: r.model,
          route: r.route,
          cost: '0',
        })),
      };
    },
  );

  app.get(
    '/usage/calls/:requestId',
    {
      schema: {
        summary: 'One call of this account by its request id: its charge, a void of its hold, its refunds',
        params: requestParams,
        response: {
          200: z.object({
            requestId: z.string(),
            currency: z.string().nullable(),
            transfers: z.array(transfer),
          }),
        },
      },
    },
    async (request) => {
      const journal = journalOrRefuse();
      const accountId = request.session!.accountId;
      const { requestId } = request.params as z.infer<typeof requestParams>;
      // Only this account's entries are read: another account's request is not found, as a typo is.
      const [found, { currency, view }] = await Promise.all([
        requestHistory(d.redis, journal, requestId, accountId),
        viewer(accountId),
      ]);
      const entries = found.find((f) => f.accountId === accountId)?.entries ?? [];
      if (entries.length === 0)
        throw new ApiError('not_found', `No call of this account has the request id '${requestId}'.`, {
          param: 'requestId',
        });
      const facts = await factsOf(accountId, entries);
      return { requestId, currency, transfers: entries.map((e) => view(e, factOf(facts, e))) };
    },
  );
}
