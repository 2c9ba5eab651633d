// One error handler for the whole proxy: whatever was thrown becomes a core ApiError (status and
// code from the SPEC table), rendered in the route's dialect. 5xx details are logged, never sent.
// 429 insufficient_quota and non-retryable 500s carry `x-should-retry: false` — the official SDKs
// otherwise retry them (SPEC "Errors", ERR-3).
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError, isApiError } from '../../core/errors.ts';
import { dialectOf, errorBody } from '../dialects/index.ts';
import { ClientClosedError } from '../request-abort.ts';

export function toApiError(err: unknown): ApiError {
  if (isApiError(err)) return err;
  const fe = err as Partial<FastifyError> | null;
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500;
  if (status === 413) {
    return new ApiError('request_too_large', 'The request body is too large.', { cause: err });
  }
  if (status >= 400 && status < 500) {
    // Body parsing (bad JSON, wrong content type): fastify's message says what was wrong.
    return new ApiError('invalid_request', fe?.message ?? 'Invalid request.', { cause: err });
  }
  return new ApiError('server_error', 'The server had an error while processing your request.', {
    cause: err,
  });
}

/** Headers that go with an error, whatever the dialect. */
export function errorHeaders(err: ApiError): Record<string, string> {
  const h: Record<string, string> = {};
  if (err.shouldRetry === false) h['x-should-retry'] = 'false';
  if (err.retryAfterS !== undefined) h['retry-after'] = String(err.retryAfterS);
  return h;
}

export function sendError(request: FastifyRequest, reply: FastifyReply, thrown: unknown): FastifyReply {
  const err = toApiError(thrown);
  // A client that left before its answer is no failure of ours (metrics count it as 499); at error
  // level it would page someone every time a user closed a tab.
  if (thrown instanceof ClientClosedError) request.log.info('client closed the connection before the answer');
  else if (err.status >= 500) request.log.error({ err: err.cause ?? err }, 'request failed');
  return reply
    .code(err.status)
    .headers(errorHeaders(err))
    .type('application/json; charset=utf-8')
    .send(errorBody(dialectOf(request), err, request.id));
}

export const errorsPlugin = fp(
  async (app: FastifyInstance) => {
    app.setErrorHandler((err, request, reply) => sendError(request, reply, err));
    app.setNotFoundHandler((request, reply) =>
      sendError(
        request,
        reply,
        new ApiError('not_found', `Unknown request URL: ${request.method} ${request.url.split('?')[0]}.`),
      ),
    );
  },
  { name: 'errors' },
);
