// POST /v1/responses (OpenAI's Responses API) on the chat-completions surface, and GET / DELETE
// /v1/responses/{id} for stored ones. The request is translated to chat form
// (../dialects/responses/request.ts), run through the one text-call money path
// (../calls/text-call.ts) exactly as a chat completion is — same hold, settlement, usage record,
// errors — and the answer translated back (../dialects/responses/text.ts). store: true (the
// default) keeps the response and its conversation (core/jobs/response-store.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ApiError, invalidRequest } from '../../core/errors.ts';
import { ResponseStore } from '../../core/jobs/response-store.ts';
import type { Redis } from '../../core/redis/client.ts';
import { BackgroundResponses, isFinal } from '../calls/background-responses.ts';
import {
  appendJson,
  current,
  jobDialect,
  jobOf,
  replay,
  settledState,
  startBackground,
} from '../calls/background-run.ts';
import { ENDPOINT_REQUESTS } from '../calls/endpoints.ts';
import { tokenModel } from '../calls/resolve-model.ts';
import { runTextCall } from '../calls/text-call.ts';
import { admitOutput, admitPrompt } from '../calls/text-door.ts';
import type { ProxyContext } from '../context.ts';
import { inputItemsPage } from '../dialects/responses/input-items.ts';
import { toChatForm } from '../dialects/responses/request.ts';
import { echoOf } from '../dialects/responses/response.ts';
import type { FinishedResponse } from '../dialects/responses/stream.ts';
import { responsesDialect } from '../dialects/responses/text.ts';
import { commonErrors } from '../schemas/openai.ts';
import {
  deletedResponse,
  inputItemList,
  inputItemsQuery,
  type ResponsesItem,
  type ResponsesRequest,
  responseObject,
  responseStreamEvent,
  retrieveQuery,
} from '../schemas/responses.ts';

const idParams = z.strictObject({ id: z.string().min(1).max(128) });

const notFound = (id: string) =>
  new ApiError('not_found', `No response with id '${id}' was found.`, { param: 'id' });

export async function responsesRoutes(app: FastifyInstance, opts: { ctx: ProxyContext; redis: Redis }) {
  const { ctx } = opts;
  const store = new ResponseStore(opts.redis, {
    maxBytes: ctx.config.PROXY_RESPONSES_MAX_STORED_BYTES,
    perAccount: ctx.config.PROXY_RESPONSES_MAX_STORED_PER_ACCOUNT,
  });
  const jobs = new BackgroundResponses(opts.redis, ctx.billing, app.log);
  app.post(
    '/responses',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Create a model response (Responses API)',
        description:
          'Translated to the engines’ chat completions and billed exactly as one. Function tools only; store: true keeps the response 30 days.',
        tags: ['chat-completions dialect'],
        body: ENDPOINT_REQUESTS['/v1/responses'],
        charged: true,
        response: { 200: responseObject, ...commonErrors },
        stream: responseStreamEvent,
      },
    },
    (request, reply) => handleCreate(app, ctx, store, jobs, request, reply),
  );
  app.get(
    '/responses/:id',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Get a stored response',
        description:
          'A background response is polled here (queued, in_progress, then its final status); stream=true replays its events after starting_after.',
        tags: ['chat-completions dialect'],
        params: idParams,
        querystring: retrieveQuery,
        response: { 200: responseObject, ...commonErrors },
        stream: responseStreamEvent,
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const q = request.query as z.infer<typeof retrieveQuery>;
      const accountId = request.principal!.accountId;
      const stored = await current(jobs, store, accountId, id);
      if (stored === null) throw notFound(id);
      if (q.stream === 'true') {
        if (stored.response.background !== true)
          throw invalidRequest('stream=true replays background responses only; this one was not.', 'stream');
        return replay(jobs, store, request, reply, accountId, id, q.starting_after ?? -1);
      }
      return reply.type('application/json').send(JSON.stringify(stored.response));
    },
  );
  app.post(
    '/responses/:id/cancel',
    {
      config: { dialect: 'openai', bodyless: true },
      schema: {
        summary: 'Cancel a background response',
        description:
          'Ends its call: billed for what was generated, exactly once. A response that already ended is returned as it is.',
        tags: ['chat-completions dialect'],
        params: idParams,
        response: { 200: responseObject, ...commonErrors },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const accountId = request.principal!.accountId;
      let stored = await current(jobs, store, accountId, id);
      if (stored === null) throw notFound(id);
      if (stored.response.background !== true)
        throw invalidRequest('Only background responses can be cancelled; this one was not.', 'id');
      if (!isFinal(stored.response.status as string)) {
        await jobs.cancel(accountId, id);
        stored = await settledState(jobs, store, accountId, id);
      }
      return reply.type('application/json').send(JSON.stringify(stored!.response));
    },
  );
  app.get(
    '/responses/:id/input_items',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'The input items of a stored response',
        description:
          'The items the response was generated from: the earlier turns its previous_response_id chain carried, then its own input. Cursor-paged as OpenAI pages it.',
        tags: ['chat-completions dialect'],
        params: idParams,
        querystring: inputItemsQuery,
        response: { 200: inputItemList, ...commonErrors },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const q = request.query as z.infer<typeof inputItemsQuery>;
      const stored = await store.get(request.principal!.accountId, id);
      if (stored === null) throw notFound(id);
      const output = (stored.response as { output?: unknown[] }).output ?? [];
      const page = inputItemsPage(id, stored.items as ResponsesItem[], output.length, {
        limit: q.limit ?? 20,
        order: q.order ?? 'desc',
        after: q.after,
      });
      if (page === null)
        throw invalidRequest(`after: response '${id}' has no input item '${q.after}'.`, 'after');
      return reply.type('application/json').send(JSON.stringify(page));
    },
  );
  app.delete(
    '/responses/:id',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Delete a stored response',
        tags: ['chat-completions dialect'],
        params: idParams,
        response: { 200: deletedResponse, ...commonErrors },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      if (!(await store.delete(request.principal!.accountId, id))) throw notFound(id);
      await jobs.forget(request.principal!.accountId, id);
      return reply.send({ id, object: 'response', deleted: true });
    },
  );
}

async function handleCreate(
  app: FastifyInstance,
  ctx: ProxyContext,
  store: ResponseStore,
  jobs: BackgroundResponses,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  // The call of a background job: its own POST, injected by the replica that queued it.
  const job = jobOf(jobs, request);
  const body = request.body as ResponsesRequest;
  if (body.background === true && body.store === false)
    throw invalidRequest(
      'background responses are stored: send store: true (or leave store out).',
      'background',
    );
  const accountId = request.principal!.accountId;
  const { entry, price } = tokenModel(ctx.catalogue, request.principal, body.model, 'chat');
  const output = admitOutput(
    entry,
    '/v1/responses',
    body,
    entry.maxOutputTokens ?? ctx.config.PROXY_DEFAULT_MAX_TOKENS,
  );
  const history = await previousItems(store, accountId, body.previous_response_id);
  // The history is translated with the input, so the door checks both (issue 30 item 4).
  const chat = toChatForm(body, entry.capabilities, history);
  const admitted = admitPrompt(entry, chat);
  const keep = body.store !== false;
  const inputItems: ResponsesItem[] =
    typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : body.input;
  // Serialized once: measured against the bound now, and spliced into what is stored.
  const conversation = keep ? JSON.stringify([...history, ...inputItems]) : '';
  if (keep && Buffer.byteLength(conversation) > store.bounds.maxBytes)
    throw invalidRequest(
      `store: true keeps responses of at most ${store.bounds.maxBytes} bytes, and this conversation is larger; send store: false (and the whole input) instead.`,
      'store',
    );
  const echo = job?.echo ?? echoOf(body, entry.id, output.perChoice, chat.declared);
  if (body.background === true && job === undefined) {
    const queued = { accountId, echo, conversation, requestId: null, cancelled: false, finished: false };
    return startBackground(app, jobs, store, request, reply, queued, body.stream === true);
  }
  const done = (response: FinishedResponse) => {
    const items = appendJson(conversation, response.output);
    // Queued on the connection now, so a GET the client sends after this response reads it.
    store
      .save(accountId, echo.id, { response: response.json, items })
      .then((kept) => {
        if (!kept) request.log.warn({ responseId: echo.id }, 'response too large to store; not kept');
      })
      .catch((err: unknown) => request.log.error({ err, responseId: echo.id }, 'storing a response failed'));
  };
  return runTextCall(
    ctx,
    request,
    reply,
    {
      entry,
      price,
      request: admitted,
      output,
      n: 1,
      stream: job !== undefined || body.stream === true,
      // Codex sends one key per conversation: its turns go to the engine that holds their prefix.
      affinityKey: body.prompt_cache_key != null ? `key:${body.prompt_cache_key}` : undefined,
    },
    job === undefined
      ? responsesDialect(echo, keep ? done : null)
      : jobDialect(jobs, store, job, responsesDialect(echo, null), request.log),
  );
}

/**
 * The conversation a previous_response_id continues (none without one). One this account has no
 * stored response for — unknown, expired, deleted or another account's — is OpenAI's 400
 * `previous_response_not_found` (GET and DELETE of such an id stay 404, as OpenAI's do).
 */
async function previousItems(
  store: ResponseStore,
  accountId: string,
  id: string | null | undefined,
): Promise<ResponsesItem[]> {
  if (id == null) return [];
  const stored = await store.get(accountId, id);
  if (stored === null)
    throw new ApiError('previous_response_not_found', `Previous response with id '${id}' not found.`, {
      param: 'previous_response_id',
    });
  return stored.items as ResponsesItem[];
}
