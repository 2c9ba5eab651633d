// The one place a dialect is chosen for rendering errors. A route declares its dialect in its
// fastify `config`; anything unrouted (an unknown path, a body or header the HTTP layer refused
// before routing) is judged by the routes the server declared: a route's dialect holds for its path
// and the paths below it (its static part, before any parameter), the longest such path winning,
// so the proxy's `/v1/messages…` answers in the Messages shape without http/ naming a path. A path
// under no declaring route is OpenAI's.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ApiError } from '../core/errors.ts';
import { messagesErrorBody } from './messages-error-body.ts';
import { openAiErrorBody } from './openai-error-body.ts';

export type Dialect = 'openai' | 'messages';

const DEFAULT_DIALECT: Dialect = 'openai';

declare module 'fastify' {
  interface FastifyContextConfig {
    dialect?: Dialect;
  }
  interface FastifyInstance {
    /** The dialects this server's routes declared, by path (routeDialectsOf). */
    routeDialects?: RouteDialects;
  }
}

/** The dialect of a path, from the routes that declared one. */
export class RouteDialects {
  private readonly owned = new Map<string, Dialect>();
  /** One case-insensitive pattern over the paths that change the answer, longest first; rebuilt on add. */
  private pattern: RegExp | null = null;
  private dialects: Dialect[] = [];

  /** A route at `url` (a fastify pattern: `/v1/videos/:id`, `/v1/models/*`) declared `dialect`. */
  add(url: string, dialect: Dialect): void {
    const segments = url.split('/');
    const dynamic = segments.findIndex((s) => s.startsWith(':') || s.includes('*'));
    const path = (dynamic === -1 ? segments : segments.slice(0, dynamic)).join('/').replace(/\/+$/, '');
    if (path === '') return;
    this.owned.set(path.toLowerCase(), dialect);
    this.compile();
  }

  /** The dialect of a request URL (its query and fragment ignored), by the longest declared path it is at or below. */
  of(url: string | undefined): Dialect {
    if (url === undefined || this.pattern === null) return DEFAULT_DIALECT;
    const m = this.pattern.exec(url);
    if (m === null) return DEFAULT_DIALECT;
    for (let i = 0; i < this.dialects.length; i++) if (m[i + 1] !== undefined) return this.dialects[i]!;
    return DEFAULT_DIALECT;
  }

  private compile(): void {
    const paths = [...this.owned.keys()].sort((a, b) => b.length - a.length);
    // A default-dialect path matters only below another dialect's path (it takes its subtree back).
    const relevant = paths.filter((p) => {
      if (this.owned.get(p) !== DEFAULT_DIALECT) return true;
      return paths.some((q) => this.owned.get(q) !== DEFAULT_DIALECT && p.startsWith(`${q}/`));
    });
    this.dialects = relevant.map((p) => this.owned.get(p)!);
    this.pattern =
      relevant.length === 0
        ? null
        : new RegExp(
            `^(?:${relevant.map((p) => `(${p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')})`).join('|')})(?:[/?#]|$)`,
            'i',
          );
  }
}

/**
 * The server's table, made on first use and filled from every route registered after: the
 * request-id and error plugins (registered before the routes) both call this on the root instance.
 */
export function routeDialectsOf(app: FastifyInstance): RouteDialects {
  if (app.routeDialects !== undefined) return app.routeDialects;
  const table = new RouteDialects();
  app.decorate('routeDialects', table);
  app.addHook('onRoute', (r) => {
    const dialect = r.config?.dialect;
    if (dialect !== undefined) table.add(r.url, dialect);
  });
  return table;
}

/** The dialect of a URL on `server` (by its routes' declarations; OpenAI's where it has none). */
export function dialectOfPath(server: FastifyInstance, url: string | undefined): Dialect {
  return server.routeDialects?.of(url) ?? DEFAULT_DIALECT;
}

export function dialectOf(request: FastifyRequest): Dialect {
  return request.routeOptions.config?.dialect ?? dialectOfPath(request.server, request.url);
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
