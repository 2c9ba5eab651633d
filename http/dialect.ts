// The one place a dialect is chosen for rendering errors. A route declares its dialect in its
// fastify `config`; anything unrouted (an unknown path, a body or header the HTTP layer refused
// before routing) is judged by its path, so `/v1/messages…` answers in the Messages shape.
import type { FastifyRequest } from 'fastify';
import type { ApiError } from '../core/errors.ts';
import { messagesErrorBody } from './messages-error-body.ts';
import { openAiErrorBody } from './openai-error-body.ts';

export type Dialect = 'openai' | 'messages';

declare module 'fastify' {
  interface FastifyContextConfig {
    dialect?: Dialect;
  }
}

/** The dialect a path belongs to: the Messages surface is `/v1/messages` and below. */
export function dialectOfPath(url: string | undefined): Dialect {
  return url !== undefined && /^\/v1\/messages(?:[/?#]|$)/i.test(url) ? 'messages' : 'openai';
}

export function dialectOf(request: FastifyRequest): Dialect {
  return request.routeOptions.config?.dialect ?? dialectOfPath(request.url);
}

export function errorBody(dialect: Dialect, err: ApiError, requestId: string): unknown {
  switch (dialect) {
    case 'openai':
      return openAiErrorBody(err);
    case 'messages':
      return messagesErrorBody(err, requestId);
    default: {
      const unreachable: never = dialect;
      throw new Error(`no error renderer for dialect ${String(unreachable)}`);
    }
  }
}
