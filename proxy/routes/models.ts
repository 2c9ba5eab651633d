// GET /v1/models and GET /v1/models/{model} (CAT-1..7): the caller's live catalogue, straight
// from the in-memory snapshot. Client tools use this as a key check, so it does nothing but the
// (cached) key lookup: no Redis, no side effects.
//
// Exact aliases are listed as entries of their own, after the models (as OpenAI lists `gpt-4o`
// beside its dated snapshot), so a client that checks its hard-coded name against the list finds
// it; an alias is listed only where the model it resolves to is callable. Patterns cannot be listed.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type CatalogueEntry, catalogueKey, isCallableBy } from '../../core/catalogue/index.ts';
import { visibleEntry } from '../calls/resolve-model.ts';
import type { ProxyContext } from '../context.ts';
import { commonErrors, type ModelEntry, modelEntry, modelList, modelParams } from '../schemas/openai.ts';

export function toModelEntry(e: CatalogueEntry): ModelEntry {
  return {
    id: e.id,
    object: 'model',
    created: e.created,
    owned_by: e.ownedBy,
    region: e.region,
    tags: e.tags,
  };
}

export async function modelsRoutes(app: FastifyInstance, opts: { ctx: ProxyContext }) {
  const { catalogue } = opts.ctx;
  app.get(
    '/models',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'List the models this key can call',
        tags: ['chat-completions dialect'],
        response: { 200: modelList, 401: commonErrors[401], 403: commonErrors[403] },
      },
    },
    async (request) => ({
      object: 'list' as const,
      data: [
        ...catalogue
          .all()
          .filter((e) => isCallableBy(e, request.principal))
          .map(toModelEntry),
        ...catalogue
          .aliases()
          .filter((a) => isCallableBy(a.entry, request.principal))
          .map((a) => ({ ...toModelEntry(a.entry), id: a.alias })),
      ],
    }),
  );
  app.get(
    // A wildcard, because ids contain `/` and clients send them unencoded (CAT-3).
    '/models/*',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Retrieve one model (case-insensitive id; / unencoded)',
        tags: ['chat-completions dialect'],
        params: modelParams,
        response: { 200: modelEntry, 401: commonErrors[401], 403: commonErrors[403], 404: commonErrors[404] },
      },
    },
    async (request: FastifyRequest) => {
      const id = (request.params as { '*': string })['*'];
      const entry = visibleEntry(catalogue, request.principal, id);
      request.metricModel = entry.id;
      // Asked by an exact alias: the entry the list shows for it. By id or pattern: the model's own.
      const alias = catalogue
        .aliases()
        .find((a) => a.entry === entry && catalogueKey(a.alias) === catalogueKey(id));
      return alias ? { ...toModelEntry(entry), id: alias.alias } : toModelEntry(entry);
    },
  );
}
