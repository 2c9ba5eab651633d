// Records what the console shows of each call besides its money (core/usage/call-facts.ts): when a
// call's response ends, its status, latency, time to first token and finish reason; and a call
// refused with an error status, as a zero-cost row of the account's capped list of refusals. Only
// the inference routes count, and only once the key is known (a 401 names no account). Written
// after the response, fire and forget: a Redis that cannot take it costs the console a "—", never
// the call (the money is in the ledger, written before the answer left).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../../core/errors.ts';
import type { Redis } from '../../core/redis/client.ts';
import { recordCallFact, recordRefused } from '../../core/usage/call-facts.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** A stream's time to its first token's frame (ms since the request arrived), set by the relay. */
    callTtftMs: number | null;
    /** The engine's finish_reason, set by the call when it read one. */
    callFinish: string | null;
    /** The error the call was answered with (its catalogue code), set by onError. */
    callErrorCode: string | null;
  }
}

/** The routes that are calls (not listings, files, batches or polls of a video job). */
const CALL_ROUTES = new Set([
  '/v1/chat/completions',
  '/v1/embeddings',
  '/v1/messages',
  '/v1/responses',
  '/v1/images/generations',
  '/v1/images/edits',
  '/v1/videos',
]);

/** The model a request named, for a refusal's row (bounded: it is user input). */
function namedModel(body: unknown): string | null {
  const model = (body as { model?: unknown } | null | undefined)?.model;
  return typeof model === 'string' && model.length > 0 ? model.slice(0, 200) : null;
}

function errorCode(error: Error & { statusCode?: number; validation?: unknown }): string {
  if (error instanceof ApiError) return error.code;
  if (error.validation !== undefined) return 'invalid_request';
  return error.statusCode === 413 ? 'request_too_large' : 'invalid_request';
}

export const callFactsPlugin = fp(
  async (app: FastifyInstance, opts: { redis: Redis }) => {
    app.decorateRequest('callTtftMs', null);
    app.decorateRequest('callFinish', null);
    app.decorateRequest('callErrorCode', null);
    app.addHook('onError', (request, _reply, error, done) => {
      request.callErrorCode = errorCode(error);
      done();
    });
    app.addHook('onRequest', (request, reply, done) => {
      if (request.method === 'POST' && CALL_ROUTES.has(request.routeOptions.url ?? '')) {
        // 'close' follows every response, finished or cut by the client, once.
        reply.raw.once('close', () => record(opts.redis, request, reply));
      }
      done();
    });
  },
  { name: 'call-facts' },
);

function record(redis: Redis, request: FastifyRequest, reply: FastifyReply): void {
  const principal = request.principal;
  // No key, no account to show it to; a batch's lines are the batch's, shown as its calls.
  if (principal === null || request.batchLine != null) return;
  const finished = reply.raw.writableFinished;
  const status = finished ? reply.raw.statusCode : 499;
  const latencyMs = Math.round(reply.elapsedTime);
  const written =
    finished && status >= 400
      ? recordRefused(redis, principal.accountId, {
          requestId: request.id,
          status,
          code: request.callErrorCode ?? `http_${status}`,
          latencyMs,
          keyId: principal.keyId,
          model: namedModel(request.body),
          route: request.routeOptions.url ?? '',
        })
      : recordCallFact(
          redis,
          principal.accountId,
          { requestId: request.id, keyId: principal.keyId },
          {
            status,
            latencyMs,
            ttftMs: request.callTtftMs,
            finishReason: request.callFinish,
          },
        );
  written.catch((err: unknown) => request.log.warn({ err }, 'could not record the call for the console'));
}
