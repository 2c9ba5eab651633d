// Profile (issue "Console" item 6; SPEC "Authentication" 6): the account's name and country. The
// country sets the billing currency; an account without one is refused by the API with 403
// billing_currency_unset, and the console says why on every page. Owners change it.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Accounts } from '../../core/accounts/accounts.ts';
import { currencyForCountry, supportedCountries } from '../../core/accounts/currency.ts';
import type { Users } from '../../core/accounts/users.ts';
import { ApiError } from '../../core/errors.ts';
import { requireOwner, requireSession } from '../plugins/session.ts';

const profile = z.object({
  account: z.object({
    id: z.string(),
    name: z.string(),
    country: z.string().nullable(),
    currency: z.string().nullable(),
  }),
  user: z.object({ email: z.string() }),
  countries: z
    .array(z.object({ code: z.string(), currency: z.string() }))
    .describe('Every country the service bills in, with its currency'),
});

export async function profileRoutes(app: FastifyInstance, d: { accounts: Accounts; users: Users }) {
  app.addHook('onRequest', requireSession);
  const countries = supportedCountries.map((code) => ({ code, currency: currencyForCountry(code)! }));

  const view = async (accountId: string, userId: string) => {
    const [account, user] = await Promise.all([d.accounts.get(accountId), d.users.get(userId)]);
    if (!account || !user) throw new ApiError('not_found', 'No such account.');
    return {
      account: { id: account.id, name: account.name, country: account.country, currency: account.currency },
      user: { email: user.email },
      countries,
    };
  };

  app.get(
    '/profile',
    { schema: { summary: 'The account profile', response: { 200: profile } } },
    async (request) => view(request.session!.accountId, request.session!.userId),
  );

  app.put(
    '/profile',
    {
      onRequest: requireOwner,
      schema: {
        summary:
          'Change the account name or country (the country sets the billing currency; it cannot change while the account holds credit in another currency)',
        body: z.object({
          name: z.string().min(1).max(200).optional(),
          country: z.string().length(2).nullable().optional(),
        }),
        response: { 200: profile },
      },
    },
    async (request) => {
      const { accountId, userId } = request.session!;
      const body = request.body as { name?: string; country?: string | null };
      if (body.name !== undefined) await d.accounts.rename(accountId, body.name);
      if (body.country !== undefined) await d.accounts.setCountry(accountId, body.country);
      return view(accountId, userId);
    },
  );
}
