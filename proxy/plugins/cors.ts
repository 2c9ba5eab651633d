// CORS so the console's Playground (another origin) can call the API with a key. The allowed
// origins are configuration (PROXY_CORS_ORIGINS), never `*`; no credentials are allowed because
// the API authenticates with a header, not cookies. Preflights are answered in onRequest, before
// auth (a browser never sends the key on a preflight). Requested headers are reflected: the
// official SDKs send a changing set of x-stainless-* headers.
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

export const corsPlugin = fp(
  async (app: FastifyInstance, opts: { origins: readonly string[] }) => {
    await app.register(cors, {
      origin: opts.origins.length > 0 ? [...opts.origins] : false,
      credentials: false,
      methods: ['GET', 'HEAD', 'POST', 'DELETE'],
      exposedHeaders: ['x-request-id', 'x-should-retry'],
      maxAge: 600,
      strictPreflight: false,
    });
  },
  { name: 'cors' },
);
