// The account's own limits on API Management (issue 34): its budget across all its keys (a spend
// limit per UTC day, ISO week or UTC month, with the current period's spend and when it resets) and
// its default rate limits for keys that set none of their own. Every member reads them; only
// owners change them, as with a key's limits (key-limits.ts). Always the session's account.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Accounts } from '../../core/accounts/accounts.ts';
import {
  ACCOUNT_SPEND_KEY,
  type BudgetWindow,
  budgetResetsAt,
  DEFAULT_BUDGET_WINDOW,
  type RateLimits,
} from '../../core/billing/index.ts';
import { ApiError } from '../../core/errors.ts';
import type { ApiKeys } from '../../core/keys/index.ts';
import { formatNano } from '../../core/money.ts';
import { requireOwner, requireSession } from '../plugins/session.ts';
import { rateLimits, window } from './key-limits.ts';
import { parseLimit, spendLimitField } from './keys.ts';

const accountLimitsView = z.object({
  rateLimits: rateLimits.describe("Defaults for the account's keys that set no such limit of their own"),
  budget: z.object({
    limit: z
      .string()
      .nullable()
      .describe('Budget per window across all keys, in the account currency; null: none'),
    window: window.describe('UTC day, ISO week (Monday 00:00 UTC on) or UTC calendar month'),
    spent: z.string().describe("All the account's keys' spend in the window's current period"),
    resetsAt: z.string().describe('When the current period ends (RFC 3339, UTC)'),
  }),
});

export async function accountLimitsRoutes(app: FastifyInstance, opts: { keys: ApiKeys; accounts: Accounts }) {
  const { keys, accounts } = opts;
  app.addHook('onRequest', requireSession);
  const accountId = (r: FastifyRequest) => r.session!.accountId;

  async function view(request: FastifyRequest) {
    const now = Date.now();
    const account = await accounts.get(accountId(request));
    if (account === null) throw new ApiError('not_found', 'No such account.');
    const w: BudgetWindow = account.budget?.window ?? DEFAULT_BUDGET_WINDOW;
    const spent = (
      await keys.windowSpend(accountId(request), [{ id: ACCOUNT_SPEND_KEY, spendWindow: w }], now)
    ).get(ACCOUNT_SPEND_KEY);
    return {
      rateLimits: account.rateLimits,
      budget: {
        limit: account.budget === null ? null : formatNano(account.budget.limit),
        window: w,
        spent: formatNano(spent ?? 0),
        resetsAt: new Date(budgetResetsAt(w, now)).toISOString().replace('.000Z', 'Z'),
      },
    };
  }

  app.get(
    '/account/limits',
    {
      schema: {
        summary:
          "The account's budget across its keys (with this period's spend) and its keys' default rate limits",
        response: { 200: accountLimitsView },
      },
    },
    async (request) => view(request),
  );

  app.put(
    '/account/limits',
    {
      // A member is a 403 whatever they send; only then is a bad body a 400.
      preValidation: requireOwner,
      schema: {
        summary:
          "Set or clear (null) the account's budget and its keys' default rate limits (owners only); what is not named stays",
        body: z
          .object({
            rateLimits: rateLimits.partial().strict().optional(),
            budget: spendLimitField.optional(),
            budgetWindow: window.optional(),
          })
          .strict(),
        response: { 200: accountLimitsView },
      },
    },
    async (request) => {
      const body = request.body as {
        rateLimits?: Partial<RateLimits>;
        budget?: string | null;
        budgetWindow?: BudgetWindow;
      };
      const id = accountId(request);
      if (body.rateLimits !== undefined && Object.keys(body.rateLimits).length > 0)
        await accounts.setRateLimits(id, body.rateLimits);
      if (body.budget !== undefined || body.budgetWindow !== undefined) {
        // A window alone changes the window of the budget there is (an account with none gets none).
        const current = (await accounts.get(id))?.budget ?? null;
        const amount =
          body.budget !== undefined
            ? parseLimit(body.budget, { param: 'budget', words: 'The budget' })
            : (current?.limit ?? null);
        await accounts.setBudget(id, amount, body.budgetWindow);
      }
      return view(request);
    },
  );
}
