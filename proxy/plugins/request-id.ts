// SPEC "Errors" 1: every response carries `X-Request-Id: req_` + 24 hex — including 404s for
// unknown routes, CORS preflights, errors and streams. The id is minted by fastify's genReqId (see
// app.ts; a client-sent id is never trusted) and set as a header in the very first hook, so every
// later exit path, even a hijacked stream, already has it.
import { randomFillSync } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

export const REQUEST_ID_HEADER = 'x-request-id';

// Same formats as core/ids newRequestId and newId, but drawn from a pool of random bytes refilled
// 1024 ids at a time: one crypto call per id was a measurable share of the proxy's CPU (a request
// mints two: its request id and its hold id).
const pool = Buffer.alloc(12 * 1024);
let offset = pool.length;

function pooledHex(bytes: number): string {
  if (offset + bytes > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + bytes);
  offset += bytes;
  return hex;
}

/** For fastify's `genReqId` option: `req_` + 24 lowercase hex. */
export function genRequestId(): string {
  return `req_${pooledHex(12)}`;
}

/** `<prefix>_` + 16 lowercase hex, like core/ids newId (hold ids minted per request). */
export function fastId(prefix: string): string {
  return `${prefix}_${pooledHex(8)}`;
}

export const requestIdPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('onRequest', (request, reply, done) => {
      reply.header(REQUEST_ID_HEADER, request.id);
      // The Anthropic SDKs surface the id from `request-id` (error.requestID, message._request_id).
      if (request.url.startsWith('/v1/messages')) reply.header('request-id', request.id);
      done();
    });
  },
  { name: 'request-id' },
);
