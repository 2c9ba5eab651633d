// A key's limits on API Management (issue 34): its rate limits (requests, input and output tokens
// per minute, calls at once) beside the account's defaults and what binds, and its budget (a spend
// limit that resets each UTC day, ISO week or UTC month) with the current period's spend. Every
// member reads them (the account's keys are shared work); only an account's owners change them:
// a limit is an owner's brake on a key, and rate limits and windows have no "tighten only" rule a
// member could be trusted with (a member's own spend limit stays settable by PATCH /keys/:id).
// Always the session's account: an id from another account is simply not found.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Accounts } from '../../core/accounts/accounts.ts';
import {
  BUDGET_WINDOWS,
  budgetResetsAt,
  effectiveRateLimits,
  MAX_RATE_LIMIT,
  NO_RATE_LIMITS,
  type RateLimits,
} from '../../core/billing/index.ts';
import { ApiError } from '../../core/errors.ts';
import type { ApiKeyRecord, ApiKeys } from '../../core/keys/index.ts';
import { formatNano } from '../../core/money.ts';
import { requireOwner, requireSession } from '../plugins/session.ts';
import { parseLimit, spendLimitField } from './keys.ts';

const limit = z.number().int().min(1).max(MAX_RATE_LIMIT).nullable();
export const rateLimits = z.object({
  requestsPerMinute: limit,
  inputTokensPerMinute: limit,
  outputTokensPerMinute: limit,
  concurrentCalls: limit,
});
export const window = z.enum(BUDGET_WINDOWS as ['day', 'week', 'month']);

const limitsView = z.object({
  keyId: z.string(),
  rateLimits: rateLimits.describe("The key's own rate limits; null: unset (the account's default applies)"),
  accountDefaults: rateLimits.describe("The account's defaults for keys that set no limit of their own"),
  effective: rateLimits.describe('What the key is held to: its own limit, else the account default'),
  use: z
    .object({
      requestsPerMinute: z.number().int(),
      inputTokensPerMinute: z.number().int(),
      outputTokensPerMinute: z.number().int(),
      concurrentCalls: z.number().int(),
    })
    .describe(
      'What the key has taken of each limit now: requests and tokens still counted in its per-minute buckets (they drain continuously), and its calls running',
    ),
  budget: z.object({
    spendLimit: z.string().nullable().describe('Spend limit per window, in the account currency; null: none'),
    spendWindow: window.describe('UTC day, ISO week (Monday 00:00 UTC on) or UTC calendar month'),
    spent: z.string().describe("The key's spend in the window's current period, in the account currency"),
    resetsAt: z.string().describe('When the current period ends (RFC 3339, UTC)'),
  }),
});
const keyParams = z.object({ id: z.string().min(1).max(64) });

export async function keyLimitsRoutes(app: FastifyInstance, opts: { keys: ApiKeys; accounts: Accounts }) {
  const { keys, accounts } = opts;
  app.addHook('onRequest', requireSession);
  const account = (r: FastifyRequest) => r.session!.accountId;

  async function activeKey(request: FastifyRequest): Promise<ApiKeyRecord> {
    const id = (request.params as { id: string }).id;
    const key = await keys.get(account(request), id);
    if (key === null || key.status !== 'active')
      throw new ApiError('not_found', `No API key '${id}' in this account.`);
    return key;
  }

  async function view(request: FastifyRequest, key: ApiKeyRecord) {
    const now = Date.now();
    const defaults = (await accounts.get(account(request)))?.rateLimits ?? NO_RATE_LIMITS;
    const [spentBy, use] = await Promise.all([
      keys.windowSpend(account(request), [key], now),
      keys.rateUse(account(request), key.id),
    ]);
    const spent = spentBy.get(key.id) ?? 0;
    return {
      keyId: key.id,
      rateLimits: key.rateLimits,
      accountDefaults: defaults,
      effective: effectiveRateLimits(key.rateLimits, defaults),
      use,
      budget: {
        spendLimit: key.spendLimit === null ? null : formatNano(key.spendLimit),
        spendWindow: key.spendWindow,
        spent: formatNano(spent),
        resetsAt: new Date(budgetResetsAt(key.spendWindow, now)).toISOString().replace('.000Z', 'Z'),
      },
    };
  }

  app.get(
    '/keys/:id/limits',
    {
      schema: {
        summary: "A key's rate limits and budget, with the budget's spend this period",
        params: keyParams,
        response: { 200: limitsView },
      },
    },
    async (request) => view(request, await activeKey(request)),
  );

  app.put(
    '/keys/:id/limits',
    {
      // Whose key and who asks are settled before the body is read: another account's key is a 404
      // and a member is a 403 whatever they send; only then is a bad body a 400.
      preValidation: async (request, reply) => {
        await activeKey(request);
        await requireOwner(request, reply);
      },
      schema: {
        summary:
          "Set or clear (null) a key's rate limits and budget (owners only); what is not named stays. The period's earlier spend counts at once",
        params: keyParams,
        body: z
          .object({
            rateLimits: rateLimits.partial().strict().optional(),
            spendLimit: spendLimitField.optional(),
            spendWindow: window.optional(),
          })
          .strict(),
        response: { 200: limitsView },
      },
    },
    async (request) => {
      const body = request.body as {
        rateLimits?: Partial<RateLimits>;
        spendLimit?: string | null;
        spendWindow?: 'day' | 'week' | 'month';
      };
      let key = await activeKey(request);
      if (body.rateLimits !== undefined && Object.keys(body.rateLimits).length > 0)
        key = await keys.setRateLimits(account(request), key.id, body.rateLimits);
      if (body.spendLimit !== undefined || body.spendWindow !== undefined) {
        // A window alone changes the window of the limit there is (a key with none gets none).
        const spendLimit = body.spendLimit !== undefined ? parseLimit(body.spendLimit) : key.spendLimit;
        key = await keys.setSpendLimit(account(request), key.id, spendLimit, body.spendWindow);
      }
      return view(request, key);
    },
  );
}
