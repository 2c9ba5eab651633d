// SPEC "Errors" 1: every response carries `X-Request-Id: req_` + 24 hex — including 404s for
// unknown routes, CORS preflights, errors and streams. The id is minted by fastify's genReqId (core/ids
// newRequestId; a client-sent id is never trusted) and set as a header in the very first hook, so every
// later exit path, even a hijacked stream, already has it.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { dialectOfPath, routeDialectsOf } from './dialect.ts';

export const REQUEST_ID_HEADER = 'x-request-id';
/** The Anthropic SDKs surface the id from `request-id` (error.requestID, message._request_id). */
export const MESSAGES_REQUEST_ID_HEADER = 'request-id';

/**
 * The request's id headers: X-Request-Id always, and `request-id` too when the request belongs to
 * the Messages dialect by its path (the routes' declarations) — the rule unrouted errors' bodies follow (./dialect.ts),
 * so `/V1/Messages` and a URL the router refused get it like `/v1/messages` does. By path, not
 * the route's config: request.routeOptions builds an object on every read, and this runs on every
 * request.
 */
export function setRequestIdHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.header(REQUEST_ID_HEADER, request.id);
  if (dialectOfPath(request.server, request.url) === 'messages')
    reply.header(MESSAGES_REQUEST_ID_HEADER, request.id);
}

export const requestIdPlugin = fp(
  async (app: FastifyInstance) => {
    routeDialectsOf(app);
    app.addHook('onRequest', (request, reply, done) => {
      setRequestIdHeaders(request, reply);
      done();
    });
  },
  { name: 'request-id' },
);
