// Opening an invitation link (issue "Console" item 6): the page shows who invites whom to what, and
// accepting joins the account — as the signed-in user when their email is the invited one, as an
// existing user after their password, or as a new user who sets a password here. Public routes:
// the link's token is the credential.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Accounts } from '../../core/accounts/accounts.ts';
import { ROLES, type Team } from '../../core/accounts/team.ts';
import { MIN_PASSWORD_LENGTH, type Users } from '../../core/accounts/users.ts';
import type { ConsoleConfig as Config } from '../../core/config/index.ts';
import { ApiError } from '../../core/errors.ts';
import { startSession } from '../plugins/session.ts';
import { csrfMatches, type Sessions } from '../sessions.ts';
import type { SignInThrottle } from '../throttle.ts';
import { meSchema } from './session.ts';

const tokenParams = z.object({ token: z.string().min(1).max(128) });

export interface InvitationDeps {
  config: Config;
  accounts: Accounts;
  users: Users;
  team: Team;
  sessions: Sessions;
  throttle: SignInThrottle;
  /** The session routes' view of a session (the answer of sign-in). */
  me(session: {
    id: string;
    userId: string;
    accountId: string;
    csrf: string;
  }): Promise<z.infer<typeof meSchema>>;
}

const gone = () => new ApiError('not_found', 'This invitation link is unknown, used or expired.');

export async function invitationRoutes(app: FastifyInstance, d: InvitationDeps) {
  app.get(
    '/invitations/:token',
    {
      schema: {
        summary: 'What an invitation link offers (before accepting)',
        params: tokenParams,
        response: {
          200: z.object({
            accountName: z.string(),
            email: z.string(),
            role: z.enum(ROLES),
            expiresAt: z.string(),
            userExists: z.boolean().describe('Accepting needs that user’s password (or their session)'),
          }),
        },
      },
    },
    async (request) => {
      const inv = await d.team.invitation((request.params as { token: string }).token);
      if (!inv) throw gone();
      const [account, existing] = await Promise.all([
        d.accounts.get(inv.accountId),
        d.users.byEmail(inv.email),
      ]);
      if (!account) throw gone();
      return {
        accountName: account.name,
        email: inv.email,
        role: inv.role,
        expiresAt: inv.expiresAt,
        userExists: existing !== null,
      };
    },
  );

  app.post(
    '/invitations/accept',
    {
      schema: {
        summary:
          'Accept an invitation: signed in as the invited email (CSRF token needed), or with that user’s password, or as a new user with a new password; answers like sign-in',
        // Why a new user need not prove the email (issue 24 item 1; docs/security.md "Invitation links").
        description:
          'The token is the credential. There is no mail server: the owner who made the link hands it to the person ' +
          'they mean, as they would a one-time password, so accepting as a new user proves possession of the link, ' +
          'not of the mailbox, and needs nothing more. A link is single use, expires after 7 days, can be withdrawn, ' +
          'and is never written to the logs (its path segment is masked).',
        body: z.object({
          token: z.string().min(1).max(128),
          password: z.string().min(1).max(1024).optional(),
        }),
        response: { 200: meSchema },
      },
    },
    async (request, reply) => {
      const { token, password } = request.body as { token: string; password?: string };
      const inv = await d.team.invitation(token);
      if (!inv) throw gone();
      const signedIn = request.signedIn;
      if (signedIn && password === undefined) {
        if (!csrfMatches(signedIn, request.headers['x-csrf-token']))
          throw new ApiError(
            'forbidden',
            'Missing or wrong CSRF token: send the x-csrf-token the session gave.',
          );
        const user = await d.users.get(signedIn.userId);
        if (!user) throw new ApiError('invalid_api_key', 'Sign in again.');
        await d.team.accept(token, user);
        await d.sessions.switchAccount(signedIn.id, inv.accountId);
        return d.me({ ...signedIn, accountId: inv.accountId });
      }
      if (password === undefined)
        throw new ApiError('invalid_request', 'password is required', { param: 'password' });
      const existing = await d.users.byEmail(inv.email);
      let userId: string;
      if (existing) {
        // The same throttle as sign-in: an invitation link is no way around it.
        if (await d.throttle.blocked(inv.email, request.ip))
          throw new ApiError('sign_in_throttled', 'Too many failed sign-ins. Wait 15 minutes and try again.');
        const user = await d.users.verify(inv.email, password);
        if (!user) {
          await d.throttle.failed(inv.email, request.ip);
          throw new ApiError('invalid_api_key', `Wrong password for ${inv.email}.`, { param: 'password' });
        }
        await d.throttle.succeeded(inv.email, request.ip);
        await d.team.accept(token, user);
        userId = user.id;
      } else {
        if (password.length < MIN_PASSWORD_LENGTH)
          throw new ApiError(
            'invalid_request',
            `password must be at least ${MIN_PASSWORD_LENGTH} characters`,
            {
              param: 'password',
            },
          );
        // The link is claimed before the user is made, so one link cannot make two users.
        const claimed = await d.team.claim(token);
        if (!claimed) throw gone();
        const user = await d.users.create({ email: inv.email, password, accountId: inv.accountId });
        await d.team.joinByInvitation(claimed, user.id);
        userId = user.id;
      }
      const session = await startSession(reply, d, userId, inv.accountId);
      return d.me(session);
    },
  );
}
