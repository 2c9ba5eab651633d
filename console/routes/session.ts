// Sign-in, who-am-I and sign-out (issue "Console" item 1).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Accounts } from '../../core/accounts.ts';
import type { Config } from '../../core/config.ts';
import { ApiError } from '../../core/errors.ts';
import type { Users } from '../../core/users.ts';
import { requireSession, SESSION_COOKIE } from '../plugins/session.ts';
import type { Sessions } from '../sessions.ts';
import type { SignInThrottle } from '../throttle.ts';

const signIn = z.object({ email: z.string().min(1).max(254), password: z.string().min(1).max(1024) });
const me = z.object({
  user: z.object({ id: z.string(), email: z.string() }),
  account: z.object({ id: z.string(), name: z.string(), currency: z.string().nullable() }),
  csrfToken: z.string(),
  apiBaseUrl: z.string().describe('The chat-completions base address (API Endpoint row)'),
});

export interface SessionDeps {
  config: Config;
  users: Users;
  accounts: Accounts;
  sessions: Sessions;
  throttle: SignInThrottle;
}

export async function sessionRoutes(app: FastifyInstance, d: SessionDeps) {
  const view = async (userId: string, accountId: string, csrf: string) => {
    const [user, account] = await Promise.all([d.users.get(userId), d.accounts.get(accountId)]);
    if (!user || !account) throw new ApiError('invalid_api_key', 'Sign in again.');
    return {
      user: { id: user.id, email: user.email },
      account: { id: account.id, name: account.name, currency: account.currency },
      csrfToken: csrf,
      apiBaseUrl: d.config.CONSOLE_API_BASE_URL,
    };
  };

  app.post(
    '/session',
    { schema: { summary: 'Sign in', body: signIn, response: { 200: me } } },
    async (request, reply) => {
      const { email, password } = request.body as z.infer<typeof signIn>;
      if (await d.throttle.blocked(email, request.ip))
        throw new ApiError('sign_in_throttled', 'Too many failed sign-ins. Wait 15 minutes and try again.');
      const user = await d.users.verify(email, password);
      if (!user) {
        await d.throttle.failed(email, request.ip);
        throw new ApiError('invalid_api_key', 'Wrong email or password.');
      }
      await d.throttle.succeeded(email);
      const session = await d.sessions.create(user.id, user.accountId);
      reply.setCookie(SESSION_COOKIE, session.id, {
        httpOnly: true,
        sameSite: 'lax',
        secure: d.config.CONSOLE_SECURE_COOKIES,
        path: '/',
        maxAge: Math.floor(d.config.CONSOLE_SESSION_TTL_MS / 1000),
      });
      return view(user.id, user.accountId, session.csrf);
    },
  );

  app.get(
    '/session',
    {
      preHandler: requireSession,
      schema: { summary: 'The signed-in user and account', response: { 200: me } },
    },
    async (request) => view(request.session!.userId, request.session!.accountId, request.session!.csrf),
  );

  app.delete(
    '/session',
    {
      preHandler: requireSession,
      schema: {
        summary: 'Sign out (the session is revoked)',
        response: { 200: z.object({ signedOut: z.literal(true) }) },
      },
    },
    async (request, reply) => {
      await d.sessions.revoke(request.session!.id);
      reply.clearCookie(SESSION_COOKIE, { path: '/' });
      return { signedOut: true as const };
    },
  );
}
