import { isSupportedCountry } from '../../core/accounts/currency.ts';
import { newId } from '../../core/ids.ts';
import { formatNano } from '../../core/money.ts';
import {
  amount,
  noExtraPositionals,
  optional,
  positional,
  positionals,
  required,
  UsageError,
} from '../args.ts';
import { type Context, requireAccount } from '../context.ts';
import type { Command } from './types.ts';

function country(value: string | undefined): string | null {
  if (value === undefined || value === 'none') return null;
  if (!isSupportedCountry(value))
    throw new UsageError(`unknown country '${value}' (use an ISO code such as US, DE, GB, or 'none')`);
  return value.toUpperCase();
}

async function showBalance(
  ctx: Context,
  accountId: string,
  extra: { note?: string; duplicate?: boolean } = {},
) {
  const account = await ctx.accounts.get(accountId);
  if (!account) throw new UsageError(`no account '${accountId}'`);
  const b = await ctx.metering.balance(accountId);
  const currency = account.currency ?? '(no currency)';
  ctx.print(
    `${extra.note ? `${extra.note}\n` : ''}${account.id}  ${account.name}  country=${account.country ?? '-'}  balance=${formatNano(b.balance)} ${currency}  held=${formatNano(b.held)}  available=${formatNano(b.available)}`,
    {
      ...account,
      balance: formatNano(b.balance),
      held: formatNano(b.held),
      available: formatNano(b.available),
      ...(extra.duplicate === undefined ? {} : { duplicate: extra.duplicate }),
    },
  );
}

export const accountCommands: Command[] = [
  {
    name: 'accounts create',
    writes: true,
    usage: 'accounts create --name <name> [--country <CC>] [--credits <amount>]',
    summary: 'create an account, optionally with a country (sets the currency) and starting credits',
    flags: { name: { type: 'string' }, country: { type: 'string' }, credits: { type: 'string' } },
    prepare(p) {
      noExtraPositionals(p, 0);
      const name = required(p, 'name');
      const c = country(optional(p, 'country'));
      const creditsArg = optional(p, 'credits');
      // 0 is a valid start (docs/operations.md "Admin CLI" shows credits as optional): the account
      // is made, no top-up.
      const credits = creditsArg === undefined ? 0 : amount(creditsArg, '--credits', { zero: true });
      return async (ctx) => {
        const account = await ctx.accounts.create({ name, country: c });
        if (credits > 0) {
          await ctx.metering.topUp({
            accountId: account.id,
            topUpId: newId('topup'),
            amount: credits,
            note: 'cli: initial credits',
          });
        }
        await showBalance(ctx, account.id);
      };
    },
  },
  {
    name: 'accounts list',
    writes: false,
    usage: 'accounts list',
    summary: 'list accounts',
    flags: {},
    prepare(p) {
      noExtraPositionals(p, 0);
      return async (ctx) => {
        const list = await ctx.accounts.list();
        ctx.print(
          list.map((a) => `${a.id}  ${a.name}  ${a.country ?? '-'}  ${a.currency ?? '-'}`).join('\n') ||
            '(no accounts)',
          list,
        );
      };
    },
  },
  {
    name: 'accounts show',
    writes: false,
    usage: 'accounts show <accountId>',
    summary: 'show an account and its balance',
    flags: {},
    prepare(p) {
      const [id] = positionals(p, 'accountId');
      return (ctx) => showBalance(ctx, id);
    },
  },
  {
    name: 'accounts set-country',
    writes: true,
    usage: 'accounts set-country <accountId> <CC|none>',
    summary: 'set the country, which sets the billing currency',
    flags: {},
    prepare(p) {
      const id = positional(p, 0, 'accountId');
      const c = country(positional(p, 1, 'country'));
      noExtraPositionals(p, 2);
      return async (ctx) => {
        await requireAccount(ctx, id);
        await ctx.accounts.setCountry(id, c);
        await showBalance(ctx, id);
      };
    },
  },
  {
    name: 'credits grant',
    writes: true,
    usage: 'credits grant <accountId> <amount> [--note <text>] [--id <grantId>]',
    summary:
      'top up an account by an amount in its currency (e.g. 25.00); with --id a re-run (a lost reply) credits once',
    flags: { note: { type: 'string' }, id: { type: 'string' } },
    prepare(p) {
      const id = positional(p, 0, 'accountId');
      const nano = amount(positional(p, 1, 'amount'), '<amount>');
      noExtraPositionals(p, 2);
      const note = optional(p, 'note') ?? 'cli: credits grant';
      const grantId = optional(p, 'id');
      if (grantId !== undefined && !/^[A-Za-z0-9._:-]{1,128}$/.test(grantId)) {
        throw new UsageError(`--id: '${grantId}' must be 1 to 128 letters, digits or . _ : -`);
      }
      return async (ctx) => {
        await requireAccount(ctx, id);
        const r = await ctx.metering.topUp({
          accountId: id,
          topUpId: grantId ?? newId('topup'),
          amount: nano,
          note,
        });
        await showBalance(ctx, id, {
          duplicate: r.duplicate,
          ...(r.duplicate ? { note: `grant '${grantId}' was applied before; nothing was credited now` } : {}),
        });
      };
    },
  },
];
