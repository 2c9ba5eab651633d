import { readFileSync } from 'node:fs';
import { noExtraPositionals, optional, required, UsageError } from '../args.ts';
import { requireAccount } from '../context.ts';
import type { Command } from './types.ts';

export const userCommands: Command[] = [
  {
    name: 'users create',
    usage: 'users create --email <email> --account <accountId> [--password <pw> | < password.txt]',
    summary: 'create a console user bound to an account (password from stdin unless --password)',
    flags: { email: { type: 'string' }, account: { type: 'string' }, password: { type: 'string' } },
    prepare(p) {
      noExtraPositionals(p, 0);
      const email = required(p, 'email');
      const accountId = required(p, 'account');
      if (!/^[^\s@]+@[^\s@]+$/.test(email))
        throw new UsageError(`--email: '${email}' is not an email address`);
      const given = optional(p, 'password');
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        const password = given ?? readFileSync(0, 'utf8').split('\n')[0] ?? '';
        if (password.length < 8) throw new UsageError('password: at least 8 characters');
        const user = await ctx.users.create({ email, password, accountId });
        await ctx.accounts.addMember(accountId, user.id);
        ctx.print(`${user.id}  ${user.email}  account=${user.accountId}`, user);
      };
    },
  },
];
