import { readFileSync } from 'node:fs';
import { invitationLink, ROLES, type Role } from '../../core/accounts/team.ts';
import { noExtraPositionals, optional, positionals, required, UsageError } from '../args.ts';
import { requireAccount } from '../context.ts';
import type { Command } from './types.ts';

function role(value: string | undefined, fallback: Role): Role {
  if (value === undefined) return fallback;
  if (!(ROLES as readonly string[]).includes(value))
    throw new UsageError(`--role: '${value}' is not one of ${ROLES.join(', ')}`);
  return value as Role;
}

export const userCommands: Command[] = [
  {
    name: 'users create',
    writes: true,
    usage:
      'users create --email <email> --account <accountId> [--role owner|member] [--password <pw> | < password.txt]',
    summary:
      'create a console user in an account (default role owner; password from stdin unless --password)',
    flags: {
      email: { type: 'string' },
      account: { type: 'string' },
      password: { type: 'string' },
      role: { type: 'string' },
    },
    prepare(p) {
      noExtraPositionals(p, 0);
      const email = required(p, 'email');
      const accountId = required(p, 'account');
      if (!/^[^\s@]+@[^\s@]+$/.test(email))
        throw new UsageError(`--email: '${email}' is not an email address`);
      const given = optional(p, 'password');
      const as = role(optional(p, 'role'), 'owner');
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        const password = given ?? readFileSync(0, 'utf8').split('\n')[0] ?? '';
        if (password.length < 8) throw new UsageError('password: at least 8 characters');
        const user = await ctx.users.create({ email, password, accountId });
        await ctx.team.add(accountId, user.id, as);
        ctx.print(`${user.id}  ${user.email}  account=${user.accountId}  role=${as}`, { ...user, role: as });
      };
    },
  },
  {
    name: 'team list',
    writes: false,
    usage: 'team list --account <accountId>',
    summary: "an account's members (with their roles) and pending invitations",
    flags: { account: { type: 'string' } },
    prepare(p) {
      noExtraPositionals(p, 0);
      const accountId = required(p, 'account');
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        const members = await Promise.all(
          (await ctx.team.members(accountId)).map(async (m) => ({
            ...m,
            email: (await ctx.users.get(m.userId))?.email ?? null,
          })),
        );
        const invitations = await ctx.team.invitations(accountId);
        ctx.print(
          [
            ...members.map((m) => `${m.userId}  ${m.email ?? '-'}  ${m.role}`),
            ...invitations.map((i) => `${i.id}  ${i.email}  ${i.role}  invited, expires ${i.expiresAt}`),
          ].join('\n') || '(nobody)',
          { members, invitations },
        );
      };
    },
  },
  {
    name: 'team invite',
    writes: true,
    usage: 'team invite --account <accountId> --email <email> [--role owner|member]',
    summary: 'invite someone to an account; prints the invitation link to send them (no mail server needed)',
    flags: { account: { type: 'string' }, email: { type: 'string' }, role: { type: 'string' } },
    prepare(p) {
      noExtraPositionals(p, 0);
      const accountId = required(p, 'account');
      const email = required(p, 'email');
      const as = role(optional(p, 'role'), 'member');
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        const { invitation, token } = await ctx.team.invite(accountId, { email, role: as, invitedBy: 'cli' });
        const link = invitationLink(ctx.config.CONSOLE_PUBLIC_URL, token);
        ctx.print(`${invitation.id}  ${invitation.email}  ${invitation.role}\n${link}`, {
          ...invitation,
          link,
        });
      };
    },
  },
  {
    name: 'team remove',
    writes: true,
    usage: 'team remove <userId> --account <accountId> [--revoke-keys]',
    summary:
      'remove a member; --revoke-keys also revokes the API keys they created (else the keys keep working)',
    flags: { account: { type: 'string' }, 'revoke-keys': { type: 'boolean' } },
    prepare(p) {
      const [userId] = positionals(p, 'userId');
      const accountId = required(p, 'account');
      const revokeKeys = p.flags['revoke-keys'] === true;
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        const { revokedKeyIds } = await ctx.team.remove(accountId, userId, { revokeKeys });
        ctx.print(`removed ${userId}; revoked keys: ${revokedKeyIds.join(', ') || 'none'}`, {
          userId,
          revokedKeyIds,
        });
      };
    },
  },
];
