// The one place a dialect is chosen for rendering errors. A route declares its dialect in its
// fastify `config`; anything unrouted is judged by its path. The Messages dialect plugs in here.
import type { FastifyRequest } from 'fastify';
import type { ApiError } from '../../core/errors.ts';
import { openAiErrorBody } from './openai/error-body.ts';

export type Dialect = 'openai';

declare module 'fastify' {
  interface FastifyContextConfig {
    dialect?: Dialect;
  }
}

export function dialectOf(request: FastifyRequest): Dialect {
  return request.routeOptions.config?.dialect ?? 'openai';
}

export function errorBody(dialect: Dialect, err: ApiError, _requestId: string): unknown {
  switch (dialect) {
    case 'openai':
      return openAiErrorBody(err);
    default: {
      const unreachable: never = dialect;
      throw new Error(`no error renderer for dialect ${String(unreachable)}`);
    }
  }
}
