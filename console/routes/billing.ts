// The billing page's API (issue "Console" item 5), always for the session's account: the ledger
// over a range, the payment providers on offer, top-up requests made and listed. The balance
// itself is GET /billing (account.ts). Money is decimal strings in the account currency.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Accounts } from '../../core/accounts/accounts.ts';
import type { ConsoleConfig as Config } from '../../core/config/index.ts';
import { ApiError, billingCurrencyUnset } from '../../core/errors.ts';
import type { Journal } from '../../core/journal/index.ts';
import { ledgerView } from '../../core/ledger/view.ts';
import { formatNano, parseDecimalToNano } from '../../core/money.ts';
import {
  currencyUnits,
  isPayable,
  type Payments,
  PROVIDER_NAMES,
  type TopUpRequest,
} from '../../core/payments/index.ts';
import type { Redis } from '../../core/redis/client.ts';
import { requireSession } from '../plugins/session.ts';

const DAY_MS = 86_400_000;
/** Longest range one ledger request reads (its cost is the entries in range: see core/ledger/view.ts). */
const MAX_RANGE_DAYS = 366;

const ledgerQuery = z.object({
  from: z.coerce.number().int().min(0).optional().describe('ms since the epoch; default 30 days before `to`'),
  to: z.coerce.number().int().min(0).optional().describe('ms since the epoch (exclusive); default now'),
});

const iso = (ms: number) => new Date(ms).toISOString();
/** A ledger line as the page gets it: its time as ISO 8601, its amount as a decimal string. */
const stamped = <T extends { atMs: number; amount: number }>({ atMs, amount, ...rest }: T) => ({
  ...rest,
  at: iso(atMs),
  amount: formatNano(amount),
});

const ledgerResponse = z.object({
  currency: z.string().nullable(),
  from: z.string(),
  to: z.string(),
  topUps: z.array(
    z.object({
      id: z.string(),
      at: z.string(),
      amount: z.string(),
      note: z.string().nullable(),
      source: z.enum(['stripe', 'approval', 'operator']).describe('operator: credits granted with the CLI'),
    }),
  ),
  charges: z
    .array(z.object({ day: z.string(), model: z.string(), requests: z.number(), amount: z.string() }))
    .describe('API calls charged, by UTC day and model'),
  refunds: z
    .array(
      z.object({
        id: z.string(),
        at: z.string(),
        amount: z.string(),
        of: z.string().describe("The refunded call's request id or video job id"),
        model: z.string().nullable(),
      }),
    )
    .describe('Refunds of API calls (a failed video job)'),
  service: z
    .array(
      z.object({
        id: z.string().describe("The caller's id"),
        at: z.string(),
        type: z.enum(['charge', 'refund']),
        amount: z.string(),
        product: z.string(),
        description: z.string(),
      }),
    )
    .describe("The service ledger API's charges and refunds (the operator's other products)"),
});

const topUpView = z.object({
  id: z.string(),
  provider: z.enum(PROVIDER_NAMES),
  status: z.enum(['pending', 'approved', 'rejected', 'credited']),
  amount: z.string(),
  currency: z.string(),
  createdAt: z.string(),
  decidedAt: z.string().optional(),
  reason: z.string().optional(),
});

const view = (r: TopUpRequest): z.infer<typeof topUpView> => ({
  id: r.id,
  provider: r.provider,
  status: r.status,
  amount: formatNano(r.amount),
  currency: r.currency,
  createdAt: r.createdAt,
  ...(r.decidedAt === null ? {} : { decidedAt: r.decidedAt }),
  ...(r.reason === null ? {} : { reason: r.reason }),
});

const topUpBody = z.object({
  amount: z
    .string()
    .regex(/^\d{1,9}(\.\d{1,9})?$/, 'a decimal amount in the account currency, such as "25" or "12.50"')
    .describe('In the account currency'),
  provider: z.enum(PROVIDER_NAMES),
});

export async function billingRoutes(
  app: FastifyInstance,
  d: {
    redis: Redis;
    accounts: Accounts;
    payments: Payments;
    config: Pick<Config, 'CONSOLE_TOPUP_MIN' | 'CONSOLE_TOPUP_MAX'>;
    /** The durable journal: the ledger's history when the archiver trims the streams. */
    journal?: Journal;
  },
) {
  // Any member may top up (money only comes in); before the body is parsed, like every console route.
  app.addHook('onRequest', requireSession);
  const min = parseDecimalToNano(d.config.CONSOLE_TOPUP_MIN);
  const max = parseDecimalToNano(d.config.CONSOLE_TOPUP_MAX);

  app.get(
    '/billing/ledger',
    {
      schema: {
        summary: 'Top-ups, charges by day and model, refunds and service charges over a range',
        querystring: ledgerQuery,
        response: { 200: ledgerResponse },
      },
    },
    async (request) => {
      const q = request.query as z.infer<typeof ledgerQuery>;
      const accountId = request.session!.accountId;
      const to = q.to ?? Date.now();
      const from = q.from ?? to - 30 * DAY_MS;
      if (from > to)
        throw new ApiError('invalid_request', '`from` must not be after `to`', { param: 'from' });
      if (to - from > MAX_RANGE_DAYS * DAY_MS)
        throw new ApiError('invalid_request', `the range may span at most ${MAX_RANGE_DAYS} days`, {
          param: 'from',
        });
      const [account, v] = await Promise.all([
        d.accounts.get(accountId),
        ledgerView(d.redis, { accountId, fromMs: from, toMs: to }, d.journal),
      ]);
      return {
        currency: account?.currency ?? null,
        from: iso(from),
        to: iso(to),
        topUps: v.topUps.map(stamped),
        charges: v.charges.map((c) => ({ ...c, amount: formatNano(c.amount) })),
        refunds: v.refunds.map(stamped),
        service: v.service.map(stamped),
      };
    },
  );

  app.get(
    '/billing/providers',
    {
      schema: {
        summary: 'How this install takes top-ups, and the amounts it accepts',
        response: {
          200: z.object({
            providers: z.array(z.enum(PROVIDER_NAMES)),
            currency: z.string().nullable(),
            min: z.string(),
            max: z.string(),
            decimals: z
              .number()
              .nullable()
              .describe('Decimal places an amount may have in the account currency'),
          }),
        },
      },
    },
    async (request) => {
      const account = await d.accounts.get(request.session!.accountId);
      const currency = account?.currency ?? null;
      return {
        providers: [...d.payments.providers.keys()],
        currency,
        min: formatNano(min),
        max: formatNano(max),
        decimals: currency === null ? null : currencyUnits(currency).decimals,
      };
    },
  );

  app.post(
    '/billing/topups',
    {
      schema: {
        summary: 'Start a top-up: a Stripe Checkout page to go to, or a request an operator approves',
        body: topUpBody,
        response: {
          200: z.discriminatedUnion('provider', [
            z.object({ provider: z.literal('stripe'), url: z.string().describe('Go here to pay') }),
            z.object({ provider: z.literal('approval'), request: topUpView }),
          ]),
        },
      },
    },
    async (request) => {
      const body = request.body as z.infer<typeof topUpBody>;
      const { accountId, userId } = request.session!;
      const provider = d.payments.providers.get(body.provider);
      if (provider === undefined)
        throw new ApiError(
          'invalid_request',
          `this install does not take top-ups through ${body.provider}; it takes: ${[...d.payments.providers.keys()].join(', ')}`,
          { param: 'provider' },
        );
      const account = await d.accounts.get(accountId);
      if (!account?.currency) throw billingCurrencyUnset();
      const amount = topUpAmount(body.amount, account.currency, min, max);
      const created = await d.payments.requests.create({
        accountId,
        amount,
        currency: account.currency,
        provider: body.provider,
        createdBy: userId,
      });
      const next = await provider.start(created);
      return next.provider === 'approval' ? { provider: 'approval', request: view(next.request) } : next;
    },
  );

  app.get(
    '/billing/topups',
    {
      schema: {
        summary: "The account's top-up requests, newest first (the latest 100)",
        response: { 200: z.object({ data: z.array(topUpView) }) },
      },
    },
    async (request) => ({
      data: (await d.payments.requests.list(request.session!.accountId)).map(view),
    }),
  );
}

/** The amount as nano-units, refused (naming `amount`) outside the limits or finer than the currency pays. */
export function topUpAmount(value: string, currency: string, min: number, max: number): number {
  let nano: number;
  try {
    nano = parseDecimalToNano(value);
  } catch {
    throw new ApiError('invalid_request', `'${value}' is not an amount: write it like 25 or 7.50.`, {
      param: 'amount',
    });
  }
  if (nano < min || nano > max)
    throw new ApiError(
      'invalid_request',
      `a top-up is from ${formatNano(min)} to ${formatNano(max)} ${currency}`,
      { param: 'amount' },
    );
  if (!isPayable(nano, currency)) {
    const decimals = currencyUnits(currency).decimals;
    throw new ApiError(
      'invalid_request',
      decimals === 0
        ? `${currency} amounts are whole numbers.`
        : `${currency} amounts have at most ${decimals} decimal places.`,
      { param: 'amount' },
    );
  }
  return nano;
}
