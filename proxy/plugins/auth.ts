// Authentication for the API routes (SPEC "Authentication"; the Messages surface also takes x-api-key): registered inside the `/v1` scope so
// it guards exactly the API, not /healthz, /readyz, /openapi.json or CORS preflights (/metrics has its own port). Runs in
// onRequest — before the body is even read — so an unauthenticated caller costs no parsing.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError, billingCurrencyUnset, invalidApiKey, retiredApiKey } from '../../core/errors.ts';
import type { Dialect } from '../../http/dialect.ts';
import type { KeyCache, KeyLease, Principal } from '../auth/key-cache.ts';
import { bearerSecret } from '../auth/principal.ts';
import type { RetiredKeys } from '../auth/retired.ts';
import { whenClosed } from '../reply-closed.ts';
import { spanOver } from '../tracing/tracing.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
    /** Dies when the key this request authenticated with is rotated or deleted. */
    keyLease: KeyLease;
  }
}

const missingKey = (dialect: Dialect | undefined) =>
  new ApiError(
    'invalid_api_key',
    dialect === 'messages'
      ? "You didn't provide an API key. Send it as 'x-api-key: <API_KEY>' or 'Authorization: Bearer <API_KEY>'."
      : "You didn't provide an API key. Send it as 'Authorization: Bearer <API_KEY>'.",
  );

/**
 * True when Authorization or x-api-key comes more than once. Node keeps only the first
 * Authorization header, so two of them (a proxy adding its own?) would silently pick one key.
 */
function repeatedKeyHeader(raw: string[]): boolean {
  let auth = 0;
  let apiKey = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 13 && name.toLowerCase() === 'authorization') auth++;
    else if (name.length === 9 && name.toLowerCase() === 'x-api-key') apiKey++;
  }
  return auth > 1 || apiKey > 1;
}

/**
 * The Messages surface takes `x-api-key` or a bearer token (AUTH-3). When `x-api-key` is present
 * it alone decides (AUTH-4): a malformed one (empty, repeated, whitespace) fails on that value and
 * never falls back to Authorization.
 */
function messagesSecret(headers: FastifyRequest['headers']): string | null {
  const apiKey = headers['x-api-key'];
  if (apiKey === undefined) return bearerSecret(headers.authorization);
  return typeof apiKey === 'string' ? apiKey : ''; // a repeated header: refused, never guessed
}

export const authPlugin = fp(
  async (app: FastifyInstance, opts: { keyCache: KeyCache; retired: RetiredKeys }) => {
    app.decorateRequest('principal', null as unknown as Principal);
    app.decorateRequest('keyLease', null as unknown as KeyLease);
    app.addHook('onRequest', (request, reply) => {
      const span = request.trace?.start('auth');
      const done = authenticate(request, reply, opts);
      return span === undefined ? done : spanOver(span, done);
    });
  },
  { name: 'auth' },
);

async function authenticate(
  request: FastifyRequest,
  reply: FastifyReply,
  opts: { keyCache: KeyCache; retired: RetiredKeys },
): Promise<void> {
  if (repeatedKeyHeader(request.raw.rawHeaders))
    throw new ApiError(
      'invalid_api_key',
      'Send one API key header: this request has the key header more than once.',
    );
  const dialect = request.routeOptions.config?.dialect;
  const secret =
    dialect === 'messages' ? messagesSecret(request.headers) : bearerSecret(request.headers.authorization);
  if (secret === null) throw missingKey(dialect);
  const principal = await opts.keyCache.resolve(secret);
  if (!principal)
    throw secret !== '' && (await opts.retired.isRetired(secret)) ? retiredApiKey() : invalidApiKey();
  if (!principal.currency) throw billingCurrencyUnset();
  request.principal = principal;
  const lease = opts.keyCache.track(principal.secretHash);
  request.keyLease = lease;
  // Let go of the key when the response closes (finished or cut; the client may have gone
  // while the key was looked up).
  whenClosed(reply, () => lease.untrack());
}
