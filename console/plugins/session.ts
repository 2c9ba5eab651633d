// Who is signed in, from the session cookie, for every console API route; and the guards routes
// use: no session (or no longer a member of the session's account) → 401; a state-changing call
// (anything but GET/HEAD) or a sensitive read without the session's CSRF token → 403; an owner-only
// route for a member → 403. The cookie is HttpOnly and SameSite=Lax, so another site can neither
// read it nor send it on a cross-site POST; the CSRF token covers what SameSite does not (old
// browsers, same-site subdomains).
import cookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Role, Team } from '../../core/accounts/team.ts';
import type { ConsoleConfig as Config } from '../../core/config/index.ts';
import { ApiError } from '../../core/errors.ts';
import { csrfMatches, type Session, type Sessions } from '../sessions.ts';

export const SESSION_COOKIE = 'mp_session';

/** A session whose user is still a member of the account it acts for, with their role there. */
export type ActiveSession = Session & { role: Role };

declare module 'fastify' {
  interface FastifyRequest {
    session: ActiveSession | null;
    /**
     * The live session the cookie names even when its user is no longer in its account (then
     * `session` is null): GET /session moves such a session to another of the user's accounts.
     */
    signedIn: Session | null;
  }
  interface FastifyContextConfig {
    /** A read that must carry the CSRF token too (Show Key: it returns a secret). */
    sensitive?: boolean;
  }
}

export const sessionPlugin = fp(
  async (app: FastifyInstance, opts: { sessions: Sessions; team: Team }) => {
    await app.register(cookie);
    app.decorateRequest('session', null);
    app.decorateRequest('signedIn', null);
    app.addHook('onRequest', async (request) => {
      const id = request.cookies[SESSION_COOKIE];
      const session = id ? await opts.sessions.get(id) : null;
      if (session === null) return;
      request.signedIn = session;
      // Checked on every request, so a member removed from the account loses it at once.
      const role = await opts.team.role(session.accountId, session.userId);
      if (role !== null) request.session = { ...session, role };
    });
  },
  { name: 'console-session' },
);

/**
 * Starts a session for the user acting for the account and sets its cookie: HttpOnly (no script
 * reads it), SameSite=Lax (no cross-site POST carries it), Secure behind TLS.
 */
export async function startSession(
  reply: FastifyReply,
  d: { sessions: Sessions; config: Pick<Config, 'CONSOLE_SECURE_COOKIES' | 'CONSOLE_SESSION_TTL_MS'> },
  userId: string,
  accountId: string,
): Promise<Session> {
  const session = await d.sessions.create(userId, accountId);
  reply.setCookie(SESSION_COOKIE, session.id, {
    httpOnly: true,
    sameSite: 'lax',
    secure: d.config.CONSOLE_SECURE_COOKIES,
    path: '/',
    maxAge: Math.floor(d.config.CONSOLE_SESSION_TTL_MS / 1000),
  });
  return session;
}

/**
 * onRequest guard for every route that needs a signed-in user. It runs before the body is parsed
 * and validated, so a caller without a session learns nothing from validation errors.
 */
export async function requireSession(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  const session = request.session;
  if (session === null)
    throw new ApiError(
      'invalid_api_key',
      request.signedIn ? 'You are no longer a member of this account. Sign in again.' : 'Sign in first.',
    );
  const changes = request.method !== 'GET' && request.method !== 'HEAD';
  if (
    (changes || request.routeOptions.config?.sensitive) &&
    !csrfMatches(session, request.headers['x-csrf-token'])
  )
    throw new ApiError('forbidden', 'Missing or wrong CSRF token: send the x-csrf-token the session gave.');
}

/** onRequest guard (after requireSession) for what only an account's owners may do. */
export async function requireOwner(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  if (request.session?.role !== 'owner')
    throw new ApiError('forbidden', "Only the account's owners can do this. Ask an owner.");
}
