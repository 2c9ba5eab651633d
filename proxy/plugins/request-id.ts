// SPEC "Errors" 1: every response carries `X-Request-Id: req_` + 24 hex — including 404s for
// unknown routes, CORS preflights, errors and streams. The id is minted by fastify's genReqId (see
// app.ts; a client-sent id is never trusted) and set as a header in the very first hook, so every
// later exit path, even a hijacked stream, already has it.
import { randomFillSync } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

export const REQUEST_ID_HEADER = 'x-request-id';

// Same format as core/ids newRequestId, but drawn from a pool of random bytes refilled 1024 ids
// at a time: one crypto call per request was a measurable share of the proxy's CPU.
const ID_BYTES = 12;
const pool = Buffer.alloc(ID_BYTES * 1024);
let offset = pool.length;

/** For fastify's `genReqId` option: `req_` + 24 lowercase hex. */
export function genRequestId(): string {
  if (offset + ID_BYTES > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const id = `req_${pool.toString('hex', offset, offset + ID_BYTES)}`;
  offset += ID_BYTES;
  return id;
}

export const requestIdPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('onRequest', (request, reply, done) => {
      reply.header(REQUEST_ID_HEADER, request.id);
      done();
    });
  },
  { name: 'request-id' },
);
