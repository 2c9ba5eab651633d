// What the console shows of the signed-in account (issue "Console" items 3–5, read side): usage
// from the rollups the settlement scripts write (no lag), grouped by key, model or day, deleted
// keys labelled; the pricing of every model the account can see; the balance.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Accounts } from '../../core/accounts/accounts.ts';
import type { Metering } from '../../core/billing/index.ts';
import { batchTokenPrice } from '../../core/billing/index.ts';
import {
  type CatalogueEntry,
  type CatalogueStore,
  isCallableBy,
  isDisplayableTo,
  priceFor,
} from '../../core/catalogue/index.ts';
import type { ApiKeys } from '../../core/keys/index.ts';
import { formatNano } from '../../core/money.ts';
import type { Redis } from '../../core/redis/client.ts';
import { usageReport } from '../../core/usage/usage.ts';
import { requireSession } from '../plugins/session.ts';
import { groupUsage, usageCsv } from '../usage-table.ts';

const DAY_MS = 86_400_000;

const usageQuery = z.object({
  from: z.coerce.number().int().min(0).optional().describe('ms since the epoch; default 30 days ago'),
  to: z.coerce.number().int().min(0).optional().describe('ms since the epoch; default now'),
  keyId: z.string().max(64).optional().describe('Only this key (View Usage)'),
  group: z.enum(['key', 'model', 'day']).default('day'),
});

const usageRow = z.object({
  group: z.string().describe('The key id, the model id, or the day (YYYY-MM-DD)'),
  label: z.string().describe('The key\'s name ("(deleted)" appended for a deleted key), else the group'),
  requests: z.number(),
  inputTokens: z.number(),
  cachedTokens: z.number(),
  outputTokens: z.number(),
  images: z.number(),
  videoSeconds: z.number(),
  cost: z.string().describe('In the account currency, charged minus refunded'),
});

export async function accountRoutes(
  app: FastifyInstance,
  d: { redis: Redis; accounts: Accounts; keys: ApiKeys; metering: Metering; catalogue: CatalogueStore },
) {
  app.addHook('onRequest', requireSession);

  const usage = async (accountId: string, q: z.infer<typeof usageQuery>) => {
    const to = q.to ?? Date.now();
    const from = q.from ?? to - 30 * DAY_MS;
    const [rows, keys, account] = await Promise.all([
      usageReport(d.redis, { accountId, fromMs: from, toMs: to, ...(q.keyId ? { keyId: q.keyId } : {}) }),
      d.keys.list(accountId, { includeDeleted: true }),
      d.accounts.get(accountId),
    ]);
    const names = new Map(keys.map((k) => [k.id, k.status === 'deleted' ? `${k.name} (deleted)` : k.name]));
    return { currency: account?.currency ?? null, rows: groupUsage(rows, q.group, names) };
  };

  app.get(
    '/usage',
    {
      schema: {
        summary: 'Usage by key, model or day (from the rollups: no lag)',
        querystring: usageQuery,
        response: { 200: z.object({ currency: z.string().nullable(), rows: z.array(usageRow) }) },
      },
    },
    async (request) => usage(request.session!.accountId, request.query as z.infer<typeof usageQuery>),
  );

  app.get(
    '/usage.csv',
    {
      schema: {
        summary: 'The same usage as CSV (a download)',
        querystring: usageQuery,
        produces: ['text/csv'],
      },
    },
    async (request, reply) => {
      const q = request.query as z.infer<typeof usageQuery>;
      const report = await usage(request.session!.accountId, q);
      reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="usage-by-${q.group}.csv"`);
      return usageCsv(report.rows, report.currency, q.group);
    },
  );

  app.get(
    '/pricing',
    {
      schema: {
        summary: 'Every model the account can see, with its prices in the account currency',
        response: {
          200: z.object({
            currency: z.string().nullable(),
            models: z.array(
              z.object({
                id: z.string(),
                kind: z.string(),
                availability: z.string(),
                callable: z
                  .boolean()
                  .describe('The account can call it now (available, or invite-only and granted)'),
                contextLength: z.number().nullable(),
                maxOutputTokens: z
                  .number()
                  .nullable()
                  .describe(
                    'The most output tokens a call may ask for: the model’s output limit, else its context length (the proxy refuses more)',
                  ),
                price: z
                  .record(z.string(), z.string())
                  .describe('input / cachedInput / output per 1M tokens; perImage; perSecond'),
                batchPrice: z
                  .record(z.string(), z.string())
                  .nullable()
                  .describe(
                    'What batch lines pay per 1M tokens (text and embeddings; docs/batches.md "Pricing")',
                  ),
                capabilities: z.object({
                  tools: z.boolean(),
                  vision: z.boolean(),
                  reasoning: z.boolean(),
                  edit: z.boolean(),
                  imageToVideo: z.boolean(),
                }),
              }),
            ),
          }),
        },
      },
    },
    async (request) => {
      const accountId = request.session!.accountId;
      const [account, grants, entries] = await Promise.all([
        d.accounts.get(accountId),
        d.accounts.grants(accountId),
        d.catalogue.list(),
      ]);
      const viewer = { currency: account?.currency ?? null, grants };
      return {
        currency: viewer.currency,
        models: entries
          .filter((e) => isDisplayableTo(e, viewer))
          .map((e) => ({
            id: e.id,
            kind: e.kind,
            availability: e.availability,
            callable: isCallableBy(e, viewer),
            contextLength: e.contextLength ?? null,
            // The proxy's own limit (proxy/calls/text-door.ts outputLimit), so the Playground offers
            // no value above what the API serves.
            maxOutputTokens: e.maxOutputTokens ?? e.contextLength ?? null,
            price: priceFor(e, viewer.currency) as unknown as Record<string, string>,
            batchPrice: batchPriceOf(e, viewer.currency),
            capabilities: e.capabilities,
          })),
      };
    },
  );

  app.get(
    '/billing',
    {
      schema: {
        summary: 'The balance: held (running calls, leases) and available',
        response: {
          200: z.object({
            currency: z.string().nullable(),
            balance: z.string(),
            held: z.string(),
            available: z.string(),
          }),
        },
      },
    },
    async (request) => {
      const accountId = request.session!.accountId;
      const [account, b] = await Promise.all([d.accounts.get(accountId), d.metering.balance(accountId)]);
      return {
        currency: account?.currency ?? null,
        balance: formatNano(b.balance),
        held: formatNano(b.held),
        available: formatNano(b.available),
      };
    },
  );
}

/** A text or embedding model's batch price in `currency` (its discount applied), else null. */
function batchPriceOf(e: CatalogueEntry, currency: string | null): Record<string, string> | null {
  const price = priceFor(e, currency);
  if (price === null || !('input' in price)) return null;
  return batchTokenPrice(price, e.batchDiscountPercent) as Record<string, string>;
}
