// Sign-in, who-am-I, switching accounts and sign-out (issue "Console" item 1). A user may belong to
// several accounts; the session acts for one at a time, and every other route works inside it.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Accounts } from '../../core/accounts/accounts.ts';
import type { Membership, Team } from '../../core/accounts/team.ts';
import type { Users } from '../../core/accounts/users.ts';
import type { ConsoleConfig as Config } from '../../core/config/index.ts';
import { ApiError } from '../../core/errors.ts';
import { requireSession, SESSION_COOKIE, startSession } from '../plugins/session.ts';
import { csrfMatches, type Session, type Sessions } from '../sessions.ts';
import type { SignInThrottle } from '../throttle.ts';

const signIn = z.object({ email: z.string().min(1).max(254), password: z.string().min(1).max(1024) });
const role = z.enum(['owner', 'member']);
export const meSchema = z.object({
  signedIn: z.literal(true),
  user: z.object({ id: z.string(), email: z.string() }),
  account: z.object({
    id: z.string(),
    name: z.string(),
    country: z.string().nullable(),
    currency: z.string().nullable(),
    role,
  }),
  accounts: z
    .array(z.object({ id: z.string(), name: z.string(), role }))
    .describe('Every account the user is in'),
  csrfToken: z.string(),
  apiBaseUrl: z.string().describe('The chat-completions base address (API Endpoint row)'),
  messagesBaseUrl: z.string().describe('The Messages dialect base address (no /v1)'),
  usageHistory: z
    .boolean()
    .describe('Calls one by one and lookups by request id are kept (a durable journal, DATABASE_URL)'),
});
export type Me = z.infer<typeof meSchema>;

export interface SessionDeps {
  config: Config;
  users: Users;
  accounts: Accounts;
  team: Team;
  sessions: Sessions;
  throttle: SignInThrottle;
  /** Whether the console has the durable journal: the usage page's calls one by one need it. */
  usageHistory: boolean;
}

const notSignedIn = () => new ApiError('invalid_api_key', 'Sign in again.');

/** Me for a session: the user, the account it acts for and every account the user is in. */
export function meView(d: Pick<SessionDeps, 'config' | 'users' | 'accounts' | 'team' | 'usageHistory'>) {
  const apiBaseUrl = d.config.CONSOLE_API_BASE_URL.replace(/\/$/, '');
  return async (session: Session): Promise<Me> => {
    const [user, memberships] = await Promise.all([
      d.users.get(session.userId),
      d.team.accountsOf(session.userId),
    ]);
    const accounts = (
      await Promise.all(
        memberships.map(async (m) => {
          const a = await d.accounts.get(m.accountId);
          return a ? { id: a.id, name: a.name, role: m.role, account: a } : null;
        }),
      )
    )
      .filter((a) => a !== null)
      .sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
    const current = accounts.find((a) => a.id === session.accountId);
    if (!user || !current) throw notSignedIn();
    return {
      signedIn: true as const,
      user: { id: user.id, email: user.email },
      account: {
        id: current.id,
        name: current.name,
        country: current.account.country,
        currency: current.account.currency,
        role: current.role,
      },
      accounts: accounts.map(({ id, name, role }) => ({ id, name, role })),
      csrfToken: session.csrf,
      apiBaseUrl,
      messagesBaseUrl: apiBaseUrl.replace(/\/v1$/, ''),
      usageHistory: d.usageHistory,
    };
  };
}

export async function sessionRoutes(app: FastifyInstance, d: SessionDeps) {
  const view = meView(d);

  /** The account a fresh session acts for: the user's own, else the first they belong to. */
  const firstAccount = (home: string, memberships: Membership[]) =>
    (memberships.find((m) => m.accountId === home) ?? memberships[0])?.accountId;

  app.post(
    '/session',
    { schema: { summary: 'Sign in', body: signIn, response: { 200: meSchema } } },
    async (request, reply) => {
      const { email, password } = request.body as z.infer<typeof signIn>;
      if (await d.throttle.blocked(email, request.ip))
        throw new ApiError('sign_in_throttled', 'Too many failed sign-ins. Wait 15 minutes and try again.');
      const user = await d.users.verify(email, password);
      if (!user) {
        await d.throttle.failed(email, request.ip);
        throw new ApiError('invalid_api_key', 'Wrong email or password.');
      }
      await d.throttle.succeeded(email, request.ip);
      const accountId = firstAccount(user.accountId, await d.team.accountsOf(user.id));
      if (accountId === undefined)
        throw new ApiError(
          'forbidden',
          'This user is not a member of any account. Ask an owner to invite you.',
        );
      return view(await startSession(reply, d, user.id, accountId));
    },
  );

  app.get(
    '/session',
    {
      schema: {
        summary: 'The signed-in user and the account the session acts for',
        response: { 200: meSchema },
      },
    },
    async (request) => {
      if (request.session) return view(request.session);
      // Removed from the account the session acted for: carry on in another of the user's accounts
      // (a read, so nothing was about to change in the wrong account).
      const left = request.signedIn;
      if (left === null) return { signedIn: false as const };
      const user = await d.users.get(left.userId);
      const next = user ? firstAccount(user.accountId, await d.team.accountsOf(user.id)) : undefined;
      if (next === undefined) {
        await d.sessions.revoke(left.id);
        return { signedIn: false as const };
      }
      await d.sessions.switchAccount(left.id, next);
      return view({ ...left, accountId: next });
    },
  );

  app.post(
    '/session/account',
    {
      onRequest: requireSession,
      schema: {
        summary: 'Switch the account the session acts for',
        body: z.object({ accountId: z.string().min(1).max(64) }),
        response: { 200: meSchema },
      },
    },
    async (request) => {
      const { accountId } = request.body as { accountId: string };
      const session = request.session!;
      if ((await d.team.role(accountId, session.userId)) === null)
        throw new ApiError('not_found', 'You are not a member of that account.');
      await d.sessions.switchAccount(session.id, accountId);
      return view({ ...session, accountId });
    },
  );

  app.delete(
    '/session',
    {
      schema: {
        summary: 'Sign out (the session is revoked)',
        response: { 200: z.object({ signedOut: z.literal(true) }) },
      },
    },
    async (request, reply) => {
      // Signing out needs the CSRF token too, or another site could sign the user out. A member
      // removed from the session's account can still sign out.
      const signedIn = request.signedIn;
      if (signedIn === null) throw new ApiError('invalid_api_key', 'Sign in first.');
      if (!csrfMatches(signedIn, request.headers['x-csrf-token']))
        throw new ApiError(
          'forbidden',
          'Missing or wrong CSRF token: send the x-csrf-token the session gave.',
        );
      await d.sessions.revoke(signedIn.id);
      reply.clearCookie(SESSION_COOKIE, { path: '/' });
      return { signedOut: true as const };
    },
  );
}
