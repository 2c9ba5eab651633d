// The service ledger API (issue "Console" item 5): the operator's other products (GPU rentals)
// charge, refund and read the credits of an account — the same balance and the same usage stream
// as the API's calls, shown on the billing page. Service to service: a bearer token from
// CONSOLE_SERVICE_TOKEN, not an API key (a key is an account's; this token acts for every
// account). Unset, the API answers 404. Every charge and refund is exactly once by the caller's
// id: a retry after a lost reply answers as the first time and moves no money.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Accounts } from '../../core/accounts/accounts.ts';
import {
  DEFAULT_SERVICE_PRODUCT,
  type Metering,
  type ServiceCharge,
  type ServiceLedger,
  type ServiceRefund,
} from '../../core/billing/index.ts';
import { ApiError, billingCurrencyUnset } from '../../core/errors.ts';
import { formatNano, parseDecimalToNano } from '../../core/money.ts';

const callerId = z
  .string()
  .regex(/^[A-Za-z0-9._:-]{1,128}$/, '1 to 128 letters, digits or . _ : -')
  .describe("The caller's id for this operation: a repeat with the same id is applied once");
const amount = z
  .string()
  .regex(/^\d{1,7}(\.\d{1,9})?$/, 'a positive decimal amount in the account currency, such as "1.25"');
const description = z.string().min(1).max(500);

const params = z.object({ accountId: z.string().min(1).max(64) });
const chargeBody = z.object({
  id: callerId,
  amount,
  description,
  product: z
    .string()
    .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'lowercase letters, digits, . _ -; at most 64')
    .optional()
    .describe(`What was sold, e.g. "gpu-rental" (default "${DEFAULT_SERVICE_PRODUCT}")`),
});
const refundBody = z.object({
  id: callerId,
  chargeId: callerId.describe('The id the charge was made with'),
  amount,
  description,
});

const chargeView = z.object({
  id: z.string(),
  object: z.literal('charge'),
  amount: z.string(),
  currency: z.string(),
  product: z.string(),
  description: z.string(),
  createdAt: z.string(),
  duplicate: z.boolean().describe('True when this id was charged before: nothing was charged now'),
});
const refundView = z.object({
  id: z.string(),
  object: z.literal('refund'),
  chargeId: z.string(),
  amount: z.string(),
  currency: z.string(),
  description: z.string(),
  createdAt: z.string(),
  duplicate: z.boolean().describe('True when this id was refunded before: nothing was refunded now'),
});

const sha256 = (s: string) => createHash('sha256').update(s).digest();

export async function ledgerApiRoutes(
  app: FastifyInstance,
  d: { token: string | undefined; accounts: Accounts; metering: Metering; ledger: ServiceLedger },
) {
  // Compared as digests, so the comparison takes the same time whatever the length sent.
  const expected = d.token === undefined ? null : sha256(d.token);
  app.addHook('onRequest', async (request) => {
    if (expected === null)
      throw new ApiError('not_found', 'The ledger API is off: set CONSOLE_SERVICE_TOKEN to turn it on.');
    const m = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '');
    if (m === null || !timingSafeEqual(sha256(m[1]!), expected))
      throw new ApiError(
        'invalid_api_key',
        'Missing or wrong service token: send Authorization: Bearer <CONSOLE_SERVICE_TOKEN>.',
      );
  });

  /** The account and its currency; money moves only in an account that has one. */
  async function billable(request: FastifyRequest): Promise<{ accountId: string; currency: string }> {
    const { accountId } = request.params as z.infer<typeof params>;
    const account = await d.accounts.get(accountId);
    if (account === null)
      throw new ApiError('not_found', `no account '${accountId}'`, { param: 'accountId' });
    if (account.currency === null) throw billingCurrencyUnset();
    return { accountId, currency: account.currency };
  }

  app.get(
    '/accounts/:accountId/balance',
    {
      schema: {
        summary: "An account's credits: balance, held by running calls, available",
        params,
        response: {
          200: z.object({
            accountId: z.string(),
            currency: z.string().nullable(),
            balance: z.string(),
            held: z.string(),
            available: z.string(),
          }),
        },
      },
    },
    async (request) => {
      const { accountId } = request.params as z.infer<typeof params>;
      const account = await d.accounts.get(accountId);
      if (account === null)
        throw new ApiError('not_found', `no account '${accountId}'`, { param: 'accountId' });
      const b = await d.metering.balance(accountId);
      return {
        accountId,
        currency: account.currency,
        balance: formatNano(b.balance),
        held: formatNano(b.held),
        available: formatNano(b.available),
      };
    },
  );

  app.post(
    '/accounts/:accountId/charges',
    {
      schema: {
        summary:
          'Charge the account from its available balance (429 insufficient_quota when it does not cover it)',
        params,
        body: chargeBody,
        response: { 200: chargeView },
      },
    },
    async (request) => {
      const body = request.body as z.infer<typeof chargeBody>;
      const { accountId, currency } = await billable(request);
      const nano = positive(body.amount);
      const r = await d.ledger.charge({
        accountId,
        id: body.id,
        amount: nano,
        product: body.product ?? DEFAULT_SERVICE_PRODUCT,
        description: body.description,
      });
      return chargeOut(r.charge, currency, r.duplicate);
    },
  );

  app.post(
    '/accounts/:accountId/refunds',
    {
      schema: {
        summary: 'Give back part or all of a charge (never more than it charged, over all its refunds)',
        params,
        body: refundBody,
        response: { 200: refundView },
      },
    },
    async (request) => {
      const body = request.body as z.infer<typeof refundBody>;
      const { accountId, currency } = await billable(request);
      const r = await d.ledger.refund({
        accountId,
        id: body.id,
        chargeId: body.chargeId,
        amount: positive(body.amount),
        description: body.description,
      });
      return refundOut(r.refund, currency, r.duplicate);
    },
  );
}

function positive(value: string): number {
  const nano = parseDecimalToNano(value);
  if (nano === 0) throw new ApiError('invalid_request', 'amount must be greater than 0', { param: 'amount' });
  return nano;
}

const chargeOut = (c: ServiceCharge, currency: string, duplicate: boolean) => ({
  id: c.id,
  object: 'charge' as const,
  amount: formatNano(c.amount),
  currency,
  product: c.product,
  description: c.description,
  createdAt: c.createdAt,
  duplicate,
});

const refundOut = (r: ServiceRefund, currency: string, duplicate: boolean) => ({
  id: r.id,
  object: 'refund' as const,
  chargeId: r.chargeId,
  amount: formatNano(r.amount),
  currency,
  description: r.description,
  createdAt: r.createdAt,
  duplicate,
});
