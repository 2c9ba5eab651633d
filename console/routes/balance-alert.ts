// The low-balance alert (issue 37 item 7): an owner sets an amount; while the account's available
// credit is below it, every console page says so with a link to Billing (the web app's
// LowBalanceBanner). One alert per account, kept in Redis beside the balance, so every member sees
// the same one; there is no mail server to send it by. The amount is in the account currency and
// compared in nano-units, exactly. Auto top-up, which charges a saved card, is auto-topup.ts.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Accounts } from '../../core/accounts/accounts.ts';
import type { Metering } from '../../core/billing/index.ts';
import { ApiError } from '../../core/errors.ts';
import { formatNano, parseDecimalToNano } from '../../core/money.ts';
import type { Redis } from '../../core/redis/client.ts';
import { accountKeys } from '../../core/redis/keyspace.ts';
import { requireOwner, requireSession } from '../plugins/session.ts';

const alertView = z.object({
  currency: z.string().nullable(),
  threshold: z.string().nullable().describe('The alert amount, or null when none is set'),
  available: z.string(),
  below: z.boolean().describe('available < threshold'),
});

/** Is `available` below the alert? No alert, no warning. Pure: the banner and the test read it. */
export const isBelow = (availableNano: number, thresholdNano: number | null) =>
  thresholdNano !== null && availableNano < thresholdNano;

export async function balanceAlertRoutes(
  app: FastifyInstance,
  d: { redis: Redis; accounts: Accounts; metering: Metering },
) {
  app.addHook('onRequest', requireSession);

  const view = async (accountId: string) => {
    const [account, b, raw] = await Promise.all([
      d.accounts.get(accountId),
      d.metering.balance(accountId),
      d.redis.get(accountKeys(accountId).balanceAlert),
    ]);
    const threshold = raw === null ? null : Number(raw);
    return {
      currency: account?.currency ?? null,
      threshold: threshold === null ? null : formatNano(threshold),
      available: formatNano(b.available),
      below: isBelow(b.available, threshold),
    };
  };

  app.get(
    '/billing/alert',
    {
      schema: {
        summary: 'The low-balance alert and whether available credit is below it',
        response: { 200: alertView },
      },
    },
    async (request) => view(request.session!.accountId),
  );

  app.put(
    '/billing/alert',
    {
      onRequest: requireOwner,
      schema: {
        summary: 'Set (a positive decimal in the account currency) or remove (null) the low-balance alert',
        body: z.object({ threshold: z.string().max(32).nullable() }),
        response: { 200: alertView },
      },
    },
    async (request) => {
      const { accountId } = request.session!;
      const { threshold } = request.body as { threshold: string | null };
      const key = accountKeys(accountId).balanceAlert;
      if (threshold === null) await d.redis.del(key);
      else {
        let nano: number;
        try {
          nano = parseDecimalToNano(threshold.trim());
        } catch {
          throw new ApiError('invalid_request', 'The alert is an amount such as 10 or 12.50.', {
            param: 'threshold',
          });
        }
        if (nano <= 0)
          throw new ApiError('invalid_request', 'The alert must be more than zero.', { param: 'threshold' });
        await d.redis.set(key, String(nano));
      }
      return view(accountId);
    },
  );
}
