// CORS so the console's Playground (another origin) can call the API with a key. The allowed
// origins are configuration (PROXY_CORS_ORIGINS), never `*`; no credentials are allowed because
// the API authenticates with a header, not cookies. Preflights are answered in onRequest, before
// auth (a browser never sends the key on a preflight). Requested headers are reflected: the
// official SDKs send a changing set of x-stainless-* headers.
// Our own few lines rather than @fastify/cors: that plugin merged its option objects and resolved
// the origin on every request, a few percent of the proxy's CPU, although only browsers send an
// Origin at all.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

const ALLOW_METHODS = 'GET, HEAD, POST, DELETE';
// x-modelplane-cost: what a non-streamed call cost (../billing/call-cost.ts), readable by the Playground too;
// x-modelplane-output-clamped and x-modelplane-tools-not-offered: what the door changed (../calls/text-door.ts);
// retry-after: when a refused call (a rate limit, a full queue) may pass, which the Playground tells its user.
const EXPOSE_HEADERS =
  'x-request-id, x-should-retry, retry-after, x-modelplane-cost, x-modelplane-output-clamped, x-modelplane-tools-not-offered';
const MAX_AGE = '600';

export const corsPlugin = fp(
  async (app: FastifyInstance, opts: { origins: readonly string[] }) => {
    const allowed = new Set(opts.origins);
    app.decorateRequest('corsPreflight', false);
    app.addHook('onRequest', (request, reply, done) => {
      // The answer depends on the Origin header: caches must key on it.
      reply.header('vary', 'Origin');
      const origin = request.headers.origin;
      if (origin === undefined || !allowed.has(origin)) return done();
      reply.header('access-control-allow-origin', origin);
      reply.header('access-control-expose-headers', EXPOSE_HEADERS);
      const preflightMethod = request.headers['access-control-request-method'];
      if (request.raw.method !== 'OPTIONS' || preflightMethod === undefined) return done();
      request.corsPreflight = true;
      reply.header('access-control-allow-methods', ALLOW_METHODS);
      const wanted = request.headers['access-control-request-headers'];
      if (wanted !== undefined) {
        reply.header('access-control-allow-headers', wanted);
        reply.header('vary', 'Origin, Access-Control-Request-Headers');
      }
      reply.header('access-control-max-age', MAX_AGE);
      done();
    });
    // Lets fastify route preflights (left out of the API reference: it has no schema); any other
    // OPTIONS request is an unknown route.
    app.options('*', (request, reply) => {
      if (!request.corsPreflight) return reply.callNotFound();
      return reply.code(204).send();
    });
  },
  { name: 'cors' },
);

declare module 'fastify' {
  interface FastifyRequest {
    /** An allowed origin's CORS preflight (answered 204 with the allow headers). */
    corsPreflight: boolean;
  }
}
