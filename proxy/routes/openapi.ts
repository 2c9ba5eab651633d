// GET /openapi.json: the API reference, generated from the very zod schemas that validate requests
// (collected as routes are registered), so the document cannot drift from what is enforced.
import type { FastifyInstance, RouteOptions } from 'fastify';
import { z } from 'zod';
import { COST_HEADER_DOC } from '../schemas/cost.ts';

interface RouteSchema {
  summary?: string;
  description?: string;
  tags?: string[];
  hide?: boolean;
  body?: z.ZodType;
  params?: z.ZodObject;
  querystring?: z.ZodObject;
  response?: Record<string, z.ZodType>;
  /**
   * A body documented but not validated by fastify (multipart forms, read as they stream in):
   * its schema for each content type it may come as.
   */
  bodyDoc?: Record<string, z.ZodType>;
  /** The payload of one event when the route streams (`stream: true`): 200 is text/event-stream too. */
  stream?: z.ZodType;
  /** A charged call: its 200 says what it cost (usage.cost, and x-modelplane-cost when not streamed). */
  charged?: boolean;
}

interface CollectedRoute {
  method: string;
  url: string;
  schema: RouteSchema;
}

/** Starts recording routes; call before registering them. */
export function collectRoutes(app: FastifyInstance): CollectedRoute[] {
  const routes: CollectedRoute[] = [];
  app.addHook('onRoute', (r: RouteOptions) => {
    const schema = r.schema as RouteSchema | undefined;
    if (!schema || schema.hide) return;
    for (const method of [r.method].flat()) {
      if (method === 'HEAD' || method === 'OPTIONS') continue;
      routes.push({ method: method.toLowerCase(), url: r.url, schema });
    }
  });
  return routes;
}

const json = (schema: z.ZodType, io: 'input' | 'output') => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return rest;
};

/** The name of a route's trailing wildcard: a model id, or (GET /files/*) an object key. */
const wildcardName = (url: string) => (url.startsWith('/v1/models') ? 'model' : 'key');

/** `/v1/models/*` → `/v1/models/{model}`; `:id` → `{id}`. */
const openApiPath = (url: string) =>
  url.replace(/\*$/, `{${wildcardName(url)}}`).replace(/:([A-Za-z0-9_]+)/g, '{$1}');

function parameters(s: RouteSchema, url: string) {
  const out: unknown[] = [];
  for (const [where, obj] of [
    ['path', s.params],
    ['query', s.querystring],
  ] as const) {
    if (!obj) continue;
    for (const [name, field] of Object.entries(obj.shape)) {
      out.push({
        name: name === '*' ? wildcardName(url) : name,
        in: where,
        required: where === 'path' || !(field as z.ZodType).safeParse(undefined).success,
        schema: json(field as z.ZodType, 'input'),
      });
    }
  }
  return out;
}

export function openApiDocument(routes: readonly CollectedRoute[], info: { version: string }) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const s = r.schema;
    const authenticated = r.url.startsWith('/v1/');
    const responses: Record<string, unknown> = {};
    for (const [code, schema] of Object.entries(s.response ?? {})) {
      responses[code] = {
        description: schema.description ?? (code === '200' ? 'OK' : 'Error'),
        ...(code === '200' && s.charged ? { headers: COST_HEADER_DOC } : {}),
        content: {
          'application/json': { schema: json(schema, 'output') },
          ...(code === '200' && s.stream
            ? { 'text/event-stream': { schema: json(s.stream, 'output') } }
            : {}),
        },
      };
    }
    const path = openApiPath(r.url);
    paths[path] ??= {};
    paths[path][r.method] = {
      summary: s.summary,
      tags: s.tags,
      ...(authenticated
        ? { security: r.url.startsWith('/v1/messages') ? [{ apiKey: [] }, { bearer: [] }] : [{ bearer: [] }] }
        : {}),
      parameters: parameters(s, r.url),
      ...(s.body
        ? {
            requestBody: {
              required: true,
              content: { 'application/json': { schema: json(s.body, 'input') } },
            },
          }
        : s.bodyDoc
          ? {
              requestBody: {
                required: true,
                content: Object.fromEntries(
                  Object.entries(s.bodyDoc).map(([type, schema]) => [
                    type,
                    { schema: json(schema, 'input') },
                  ]),
                ),
              },
            }
          : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'modelplane inference API',
      version: info.version,
      description:
        'Chat-completions dialect at {base_url}/v1; Messages dialect at {base_url} (clients append /v1/messages). ' +
        'Every response carries X-Request-Id (req_ + 24 hex). Errors: {"error":{"message","type","param","code"}} ' +
        'on the chat-completions surface, {"type":"error","error":{"type","message","code"},"request_id"} on the ' +
        'Messages surface.',
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'API key: sk-service-...' },
        apiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'x-api-key',
          description: 'Messages surface: the API key',
        },
      },
    },
    paths,
  };
}

export async function openApiRoutes(app: FastifyInstance, opts: { routes: readonly CollectedRoute[] }) {
  let cached: string | null = null;
  app.get('/openapi.json', async (_request, reply) => {
    // Built on first request: by then every route, of every dialect, is registered.
    cached ??= JSON.stringify(openApiDocument(opts.routes, { version: '1' }));
    return reply.type('application/json; charset=utf-8').send(cached);
  });
}
