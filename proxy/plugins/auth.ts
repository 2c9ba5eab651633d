// Authentication for the API routes (SPEC "Authentication"): registered inside the `/v1` scope so
// it guards exactly the API, not /healthz, /metrics, /openapi.json or CORS preflights. Runs in
// onRequest — before the body is even read — so an unauthenticated caller costs no parsing.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError, billingCurrencyUnset, invalidApiKey } from '../../core/errors.ts';
import type { KeyCache, KeyLease, Principal } from '../auth/key-cache.ts';
import { bearerSecret } from '../auth/principal.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
    /** Dies when the key this request authenticated with is rotated or deleted. */
    keyLease: KeyLease;
  }
}

const missingKey = () =>
  new ApiError(
    'invalid_api_key',
    "You didn't provide an API key. Send it as 'Authorization: Bearer <API_KEY>'.",
  );

export const authPlugin = fp(
  async (app: FastifyInstance, opts: { keyCache: KeyCache }) => {
    app.decorateRequest('principal', null as unknown as Principal);
    app.decorateRequest('keyLease', null as unknown as KeyLease);
    app.addHook('onRequest', async (request, reply) => {
      const secret = bearerSecret(request.headers.authorization);
      if (secret === null) throw missingKey();
      const principal = await opts.keyCache.resolve(secret);
      if (!principal) throw invalidApiKey();
      if (!principal.currency) throw billingCurrencyUnset();
      request.principal = principal;
      const lease = opts.keyCache.track(principal.secretHash);
      request.keyLease = lease;
      // 'close' follows both a finished response and a client that went away.
      reply.raw.once('close', () => lease.untrack());
    });
  },
  { name: 'auth' },
);
