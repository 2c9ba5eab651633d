// Team (issue "Console" item 6): the account's members and their roles, invitations by link (no
// mail server: the link is shown to the inviter, and `modelplane team invite` prints it), and
// removal with the option "Also revoke the API keys this member created" (KEY-7). Anyone in the
// account sees the team; only owners change it.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { invitationLink, ROLES, type Team } from '../../core/accounts/team.ts';
import type { Users } from '../../core/accounts/users.ts';
import type { ConsoleConfig as Config } from '../../core/config/index.ts';
import { requireOwner, requireSession } from '../plugins/session.ts';

const role = z.enum(ROLES);
const invitationView = z.object({
  id: z.string(),
  email: z.string(),
  role,
  createdAt: z.string(),
  expiresAt: z.string(),
});
const userParams = z.object({ userId: z.string().min(1).max(64) });

export async function teamRoutes(app: FastifyInstance, d: { config: Config; team: Team; users: Users }) {
  app.addHook('onRequest', requireSession);
  const owner = { onRequest: requireOwner };

  app.get(
    '/team',
    {
      schema: {
        summary: "The account's members and pending invitations",
        response: {
          200: z.object({
            members: z.array(z.object({ userId: z.string(), email: z.string(), role, you: z.boolean() })),
            invitations: z.array(invitationView),
          }),
        },
      },
    },
    async (request) => {
      const { accountId, userId } = request.session!;
      const [members, invitations] = await Promise.all([
        d.team.members(accountId),
        d.team.invitations(accountId),
      ]);
      const withEmail = await Promise.all(
        members.map(async (m) => ({
          userId: m.userId,
          email: (await d.users.get(m.userId))?.email ?? '(unknown user)',
          role: m.role,
          you: m.userId === userId,
        })),
      );
      return {
        members: withEmail.sort((a, b) => a.email.localeCompare(b.email)),
        invitations: invitations.map(({ id, email, role, createdAt, expiresAt }) => ({
          id,
          email,
          role,
          createdAt,
          expiresAt,
        })),
      };
    },
  );

  app.post(
    '/team/invitations',
    {
      ...owner,
      schema: {
        summary: 'Invite someone by email: the answer carries the link to send them (shown once)',
        body: z.object({ email: z.string().min(3).max(254), role: role.default('member') }),
        response: { 200: z.object({ invitation: invitationView, link: z.string() }) },
      },
    },
    async (request) => {
      const body = request.body as { email: string; role: (typeof ROLES)[number] };
      const { invitation, token } = await d.team.invite(request.session!.accountId, {
        email: body.email,
        role: body.role,
        invitedBy: request.session!.userId,
      });
      const { id, email, role: r, createdAt, expiresAt } = invitation;
      return {
        invitation: { id, email, role: r, createdAt, expiresAt },
        link: invitationLink(d.config.CONSOLE_PUBLIC_URL, token),
      };
    },
  );

  app.delete(
    '/team/invitations/:id',
    {
      ...owner,
      schema: {
        summary: 'Withdraw an invitation (its link stops working)',
        params: z.object({ id: z.string().min(1).max(64) }),
        response: { 200: z.object({ revoked: z.literal(true) }) },
      },
    },
    async (request) => {
      await d.team.revokeInvitation(request.session!.accountId, (request.params as { id: string }).id);
      return { revoked: true as const };
    },
  );

  app.patch(
    '/team/members/:userId',
    {
      ...owner,
      schema: {
        summary: "Change a member's role (an account always keeps an owner)",
        params: userParams,
        body: z.object({ role }),
        response: { 200: z.object({ userId: z.string(), role }) },
      },
    },
    async (request) => {
      const { userId } = request.params as { userId: string };
      const { role: r } = request.body as { role: (typeof ROLES)[number] };
      await d.team.setRole(request.session!.accountId, userId, r);
      return { userId, role: r };
    },
  );

  app.post(
    '/team/members/:userId/remove',
    {
      ...owner,
      schema: {
        summary:
          'Remove a member; with revokeKeys ("Also revoke the API keys this member created") their keys stop working, else they keep working',
        params: userParams,
        body: z.object({ revokeKeys: z.boolean() }),
        response: { 200: z.object({ removed: z.literal(true), revokedKeyIds: z.array(z.string()) }) },
      },
    },
    async (request) => {
      const { userId } = request.params as { userId: string };
      const { revokeKeys } = request.body as { revokeKeys: boolean };
      const { revokedKeyIds } = await d.team.remove(request.session!.accountId, userId, { revokeKeys });
      return { removed: true as const, revokedKeyIds };
    },
  );
}
