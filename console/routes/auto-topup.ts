// Auto top-up on the billing page (issue 37 item 7): every member sees it; an owner saves a card
// (a Stripe page in setup mode) and sets when and how much to top up, and how often at most. The
// charging itself is the console's checker (core/payments/auto-topup.ts), never a request here.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Accounts } from '../../core/accounts/accounts.ts';
import type { ConsoleConfig as Config } from '../../core/config/index.ts';
import { ApiError, billingCurrencyUnset } from '../../core/errors.ts';
import { formatNano, parseDecimalToNano } from '../../core/money.ts';
import type { AutoTopUpStore, AutoTopUps } from '../../core/payments/index.ts';
import { requireOwner, requireSession } from '../plugins/session.ts';
import { topUpAmount } from './billing.ts';

const MAX_MONTHLY_CAP = 100;

const autoView = z.object({
  available: z.boolean().describe('false when this install does not take Stripe payments'),
  currency: z.string().nullable(),
  enabled: z.boolean(),
  threshold: z.string().nullable().describe('Top up when the balance falls below this'),
  amount: z.string().nullable().describe('How much each auto top-up charges and credits'),
  monthlyCap: z.number().nullable().describe('Most auto top-ups per calendar month (UTC)'),
  card: z.object({ brand: z.string(), last4: z.string() }).nullable(),
  paused: z.string().nullable().describe('Why auto top-up stopped itself (failed charges), or null'),
  failures: z.number().describe('Failed charges in a row'),
  thisMonth: z.number().describe('Auto top-ups started this calendar month'),
  last: z
    .object({
      id: z.string(),
      at: z.string(),
      status: z.enum(['charging', 'awaiting', 'credited', 'failed', 'capped']),
      amount: z.string(),
      reason: z.string().nullable(),
    })
    .nullable(),
});

/** What GET and PUT /billing/auto-topup answer (the web app and the tests read it). */
export type AutoTopUpView = z.infer<typeof autoView>;

const settingsBody = z.object({
  enabled: z.boolean(),
  threshold: z.string().max(32),
  amount: z.string().max(32),
  monthlyCap: z.number().int().min(1).max(MAX_MONTHLY_CAP),
});

export async function autoTopUpRoutes(
  app: FastifyInstance,
  d: {
    accounts: Accounts;
    store: AutoTopUpStore;
    /** null when Stripe is not a provider here: the page says auto top-up is not offered. */
    auto: AutoTopUps | null;
    config: Pick<Config, 'CONSOLE_TOPUP_MIN' | 'CONSOLE_TOPUP_MAX'>;
  },
) {
  app.addHook('onRequest', requireSession);
  const min = parseDecimalToNano(d.config.CONSOLE_TOPUP_MIN);
  const max = parseDecimalToNano(d.config.CONSOLE_TOPUP_MAX);

  const view = async (accountId: string): Promise<z.infer<typeof autoView>> => {
    const [account, s] = await Promise.all([d.accounts.get(accountId), d.store.get(accountId)]);
    const money = (n: number | null) => (n === null ? null : formatNano(n));
    return {
      available: d.auto !== null,
      currency: account?.currency ?? null,
      enabled: s.enabled,
      threshold: money(s.threshold),
      amount: money(s.amount),
      monthlyCap: s.monthlyCap,
      card: s.card === null ? null : { brand: s.card.brand, last4: s.card.last4 },
      paused: s.paused,
      failures: s.failures,
      thisMonth: s.month === new Date().toISOString().slice(0, 7) ? s.monthCount : 0,
      last:
        s.last === null
          ? null
          : {
              id: s.last.id,
              at: s.last.at,
              status: s.last.status,
              amount: formatNano(s.last.amount),
              reason: s.last.reason,
            },
    };
  };

  const offered = () => {
    if (d.auto === null)
      throw new ApiError(
        'invalid_request',
        'This install does not take card payments, so auto top-up is not offered.',
      );
    return d.auto;
  };

  app.get(
    '/billing/auto-topup',
    {
      schema: { summary: "Auto top-up's settings, saved card and last attempt", response: { 200: autoView } },
    },
    async (request) => view(request.session!.accountId),
  );

  app.put(
    '/billing/auto-topup',
    {
      onRequest: requireOwner,
      schema: {
        summary: 'Turn auto top-up on or off, with its threshold, amount and monthly cap',
        body: settingsBody,
        response: { 200: autoView },
      },
    },
    async (request) => {
      offered();
      const { accountId } = request.session!;
      const body = request.body as z.infer<typeof settingsBody>;
      const account = await d.accounts.get(accountId);
      if (!account?.currency) throw billingCurrencyUnset();
      let threshold: number;
      try {
        threshold = parseDecimalToNano(body.threshold.trim());
      } catch {
        throw new ApiError('invalid_request', 'The threshold is an amount such as 10 or 12.50.', {
          param: 'threshold',
        });
      }
      if (threshold <= 0)
        throw new ApiError('invalid_request', 'The threshold must be more than zero.', {
          param: 'threshold',
        });
      const amount = topUpAmount(body.amount.trim(), account.currency, min, max);
      if (body.enabled && (await d.store.get(accountId)).card === null)
        throw new ApiError('invalid_request', 'Save a card before turning auto top-up on.', {
          param: 'enabled',
        });
      await d.store.save(accountId, {
        enabled: body.enabled,
        threshold,
        amount,
        monthlyCap: body.monthlyCap,
      });
      return view(accountId);
    },
  );

  app.post(
    '/billing/auto-topup/card',
    {
      onRequest: requireOwner,
      schema: {
        summary: "Start saving a card for auto top-up: Stripe's page to go to",
        response: { 200: z.object({ url: z.string().describe('Go here to save the card') }) },
      },
    },
    async (request) => {
      const auto = offered();
      const { accountId } = request.session!;
      const account = await d.accounts.get(accountId);
      if (!account?.currency) throw billingCurrencyUnset();
      try {
        return { url: await auto.startCardSetup(accountId, account.currency) };
      } catch (err) {
        throw new ApiError('server_error', 'The payment provider could not start saving a card. Try again.', {
          cause: err,
        });
      }
    },
  );
}
