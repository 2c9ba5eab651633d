// Who is signed in, from the session cookie, for every console API route; and the guard every
// route but sign-in uses: no session → 401; a state-changing call (anything but GET/HEAD) or a
// sensitive read without the session's CSRF token → 403. The cookie is HttpOnly and
// SameSite=Lax, so another site can neither read it nor send it on a cross-site POST; the CSRF
// token covers what SameSite does not (old browsers, same-site subdomains).
import cookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../../core/errors.ts';
import { csrfMatches, type Session, type Sessions } from '../sessions.ts';

export const SESSION_COOKIE = 'mp_session';

declare module 'fastify' {
  interface FastifyRequest {
    session: Session | null;
  }
  interface FastifyContextConfig {
    /** A read that must carry the CSRF token too (Show Key: it returns a secret). */
    sensitive?: boolean;
  }
}

export const sessionPlugin = fp(
  async (app: FastifyInstance, opts: { sessions: Sessions }) => {
    await app.register(cookie);
    app.decorateRequest('session', null);
    app.addHook('onRequest', async (request) => {
      const id = request.cookies[SESSION_COOKIE];
      request.session = id ? await opts.sessions.get(id) : null;
    });
  },
  { name: 'console-session' },
);

/** preHandler for every route that needs a signed-in user. */
export async function requireSession(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  const session = request.session;
  if (session === null) throw new ApiError('invalid_api_key', 'Sign in first.');
  const changes = request.method !== 'GET' && request.method !== 'HEAD';
  if (
    (changes || request.routeOptions.config?.sensitive) &&
    !csrfMatches(session, request.headers['x-csrf-token'])
  )
    throw new ApiError('forbidden', 'Missing or wrong CSRF token: send the x-csrf-token the session gave.');
}
