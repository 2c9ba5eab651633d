// One error handler for every server here (proxy and console): whatever was thrown becomes a core ApiError (status and
// code from the SPEC table), rendered in the route's dialect. 5xx details are logged, never sent.
// 429 insufficient_quota and non-retryable 500s carry `x-should-retry: false` — the official SDKs
// otherwise retry them (SPEC "Errors", ERR-3).
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError, invalidRequest, isApiError, storeUnavailable } from '../core/errors.ts';
import { newRequestId } from '../core/ids.ts';
import { isRedisUnavailable } from '../core/redis/unavailable.ts';
import { ClientClosedError } from './client-closed.ts';
import { dialectOf, dialectOfPath, errorBody, routeDialectsOf } from './dialect.ts';
import { MESSAGES_REQUEST_ID_HEADER, REQUEST_ID_HEADER, setRequestIdHeaders } from './request-id.ts';

export function toApiError(err: unknown): ApiError {
  if (isApiError(err)) return err;
  // A hung or dead Redis (issue 22): nothing was done or billed, so the 500 is retryable.
  if (isRedisUnavailable(err)) return storeUnavailable();
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

/**
 * Logs a failed request: 5xx at error level, Redis out of reach at warn, a client that left at
 * info, the rest not at all.
 */
export function logFailure(request: FastifyRequest, thrown: unknown, err: ApiError): void {
  // A client that left before its answer is no failure of ours (metrics count it as 499); at error
  // level it would page someone every time a user closed a tab.
  if (thrown instanceof ClientClosedError) request.log.info('client closed the connection before the answer');
  // A shard failing over is an outage the fault gauges and alerts report, not a bug of ours: said
  // once per call, by what it is (issue 38), with the client's words for which node and slot.
  else if (!isApiError(thrown) && isRedisUnavailable(thrown))
    request.log.warn(
      { redisError: (thrown as Error).message },
      'Redis unavailable; answered a retryable 500',
    );
  else if (err.status >= 500) request.log.error({ err: err.cause ?? err }, 'request failed');
}

export function sendError(request: FastifyRequest, reply: FastifyReply, thrown: unknown): FastifyReply {
  const err = toApiError(thrown);
  // Errors raised before the request-id hook ran (a URL the router refused) still carry the id.
  if (!reply.hasHeader(REQUEST_ID_HEADER)) setRequestIdHeaders(request, reply);
  logFailure(request, thrown, err);
  return reply
    .code(err.status)
    .headers(errorHeaders(err))
    .type('application/json; charset=utf-8')
    .send(errorBody(dialectOf(request), err, request.id));
}

/**
 * For fastify's `frameworkErrors` option: what the router refuses before any route runs (a path
 * with bad percent-encoding, an overlong parameter) answered like every other error.
 */
export function frameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const path = request.url.split('?')[0];
  let answer: unknown = err;
  if (err.code === 'FST_ERR_BAD_URL')
    answer = invalidRequest(`The URL path '${path}' is not valid: check its percent-encoding.`);
  else if (err.code === 'FST_ERR_MAX_PARAM_LENGTH')
    answer = invalidRequest('A parameter in the URL path is too long.');
  sendError(request, reply, answer);
}

/** Route URL patterns by method, as registered: a wrong method on a known path is a 405 with Allow. */
export class RouteMethods {
  private readonly routes: { pattern: RegExp; method: string }[] = [];

  add(url: string, methods: string | string[]): void {
    const pattern = new RegExp(
      `^${url
        .split('/')
        .map((seg) =>
          seg === '*' ? '.*' : seg.startsWith(':') ? '[^/]+' : seg.replace(/[.+?^${}()|[\]\\]/g, '\\$&'),
        )
        .join('/')}$`,
    );
    for (const method of [methods].flat()) if (method !== 'HEAD') this.routes.push({ pattern, method });
  }

  /** The methods `path` is served with (empty for an unknown path). */
  allowed(path: string): string[] {
    return [...new Set(this.routes.filter((r) => r.pattern.test(path)).map((r) => r.method))];
  }
}

export interface ErrorsOptions {
  /**
   * A GET to no route, before it becomes the JSON 404: answers it (the console's web app, drawing
   * "Page not found" for a browser) and returns true, or returns false to leave it to the 404.
   */
  notFoundPage?: (request: FastifyRequest, reply: FastifyReply) => boolean;
}

export const errorsPlugin = fp(
  async (app: FastifyInstance, opts: ErrorsOptions) => {
    routeDialectsOf(app);
    const routes = new RouteMethods();
    app.addHook('onRoute', (r) => routes.add(r.url, r.method));
    app.setErrorHandler((err, request, reply) => sendError(request, reply, err));
    app.setNotFoundHandler((request, reply) => {
      const path = request.url.split('?')[0]!;
      const allow = routes.allowed(path).filter((m) => m !== 'OPTIONS');
      if (allow.length > 0 && !allow.includes(request.method)) {
        reply.header('allow', allow.join(', '));
        return sendError(
          request,
          reply,
          new ApiError(
            'method_not_allowed',
            `${request.method} is not supported on ${path}; use ${allow.join(' or ')}.`,
          ),
        );
      }
      if (request.method === 'GET' && opts.notFoundPage?.(request, reply)) return reply;
      return sendError(
        request,
        reply,
        new ApiError('not_found', `Unknown request URL: ${request.method} ${path}.`),
      );
    });
  },
  { name: 'errors' },
);

/**
 * For fastify's `clientErrorHandler`: a request the HTTP parser refused (a header with a bare
 * newline, 100 KB of headers, a line that is not HTTP, a request that took too long) still gets
 * an answer in the error shape of its path's dialect, with a request id, before the socket closes.
 */
export function clientError(this: FastifyInstance | undefined, error: Error, socket: Socket): void {
  const err = error as NodeJS.ErrnoException & { rawPacket?: Buffer };
  if (err.code === 'ECONNRESET' || socket.destroyed || answered.has(socket)) return;
  const apiErr =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new ApiError('request_timeout', 'The request took too long to arrive.')
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? new ApiError('headers_too_large', 'The request headers are too large.')
        : invalidRequest(`The request could not be parsed as HTTP: ${clientErrorReason(err.code)}.`);
  const requestLine =
    err.rawPacket?.toString('latin1', 0, Math.min(err.rawPacket.length, 2048)).split('\r\n')[0] ?? '';
  const path = /^[A-Z]+ (\S+) HTTP\//.exec(requestLine)?.[1];
  const id = newRequestId();
  // Bound by fastify to the server whose socket it is: its routes say the path's dialect.
  const dialect = this === undefined ? 'openai' : dialectOfPath(this, path);
  const body = JSON.stringify(errorBody(dialect, apiErr, id));
  const extra = dialect === 'messages' ? `${MESSAGES_REQUEST_ID_HEADER}: ${id}\r\n` : '';
  const answer =
    `HTTP/1.1 ${apiErr.status} ${STATUS_CODES[apiErr.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${id}\r\n${extra}Connection: close\r\n\r\n${body}`;
  answered.add(socket);
  if (!socket.writable || err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    // A slow or silent client: closed at once (test/hostile/silent-sockets.test.ts).
    if (socket.writable) socket.write(answer);
    socket.destroy();
    return;
  }
  // A client still sending (100 KB of headers) would get a TCP reset if the socket closed with its
  // bytes unread, and a reset can arrive before the answer is read (ECONNRESET, no 431): answer,
  // half-close, and read and drop what still comes for a short while (a lingering close, as nginx
  // does) before the socket is destroyed.
  socket.end(answer);
  socket.resume();
  const linger = setTimeout(() => socket.destroy(), LINGER_MS);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
}

/** How long a refused request's socket reads and drops what its client still sends. */
const LINGER_MS = 2_000;
/** Sockets already answered: the parser reports every later chunk as another error. */
const answered = new WeakSet<Socket>();

function clientErrorReason(code: string | undefined): string {
  switch (code) {
    case 'HPE_INVALID_HEADER_TOKEN':
      return 'a header has a character headers may not contain (a pasted newline?)';
    case 'HPE_LF_EXPECTED':
    case 'HPE_CR_EXPECTED':
      return 'a header line ends with a bare newline (a pasted key?)';
    case 'HPE_INVALID_METHOD':
      return 'the request line is not HTTP';
    default:
      return code ?? 'malformed request';
  }
}
