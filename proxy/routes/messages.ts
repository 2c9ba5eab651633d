// The Messages dialect (SPEC "Messages dialect", MSG-1..9): POST /v1/messages and
// /v1/messages/count_tokens, for the Anthropic SDKs and editor tools that take an "Anthropic base
// URL". The request is translated to chat form (dialects/messages/request.ts), run through the one
// text-call money path (../calls/text-call.ts) exactly as a chat completion is, and the answer
// translated back (../dialects/messages/text.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { estimatedPromptTokens } from '../billing/text-quote.ts';
import { ENDPOINT_REQUESTS } from '../calls/endpoints.ts';
import { tokenModel } from '../calls/resolve-model.ts';
import { runTextCall } from '../calls/text-call.ts';
import { admitOutput, admitPrompt } from '../calls/text-door.ts';
import { engineTokenCount } from '../calls/token-count.ts';
import type { ProxyContext } from '../context.ts';
import { toChatRequest } from '../dialects/messages/request.ts';
import { messagesDialect } from '../dialects/messages/text.ts';
import { type CountTokensRequest, countTokensRequest, type MessagesRequest } from '../schemas/messages.ts';
import {
  countTokensResponse,
  messageResponse,
  messagesErrors,
  messagesStreamEvent,
} from '../schemas/messages-response.ts';

// Editor tools call `{base_url}/v1/messages?beta=true`; the flag changes nothing here.
const betaQuery = z.looseObject({ beta: z.string().optional().describe('Sent by some clients; ignored') });

export async function messagesRoutes(app: FastifyInstance, opts: { ctx: ProxyContext }) {
  const { ctx } = opts;
  app.post(
    '/messages',
    {
      config: { dialect: 'messages' },
      schema: {
        summary: 'Create a message (Messages dialect)',
        description:
          'Authenticate with x-api-key or Authorization: Bearer. anthropic-version and anthropic-beta headers are accepted.',
        tags: ['messages dialect'],
        querystring: betaQuery,
        body: ENDPOINT_REQUESTS['/v1/messages'],
        charged: true,
        response: { 200: messageResponse, ...messagesErrors },
        stream: messagesStreamEvent,
      },
    },
    (request, reply) => handleMessages(ctx, request, reply),
  );
  app.post(
    '/messages/count_tokens',
    {
      config: { dialect: 'messages' },
      schema: {
        summary: 'Count the input tokens of a message request, free of charge',
        tags: ['messages dialect'],
        querystring: betaQuery,
        body: countTokensRequest,
        response: { 200: countTokensResponse, ...messagesErrors },
      },
    },
    (request, reply) => handleCountTokens(ctx, request, reply),
  );
}

function handleMessages(ctx: ProxyContext, request: FastifyRequest, reply: FastifyReply) {
  const body = request.body as MessagesRequest;
  const { entry, price } = tokenModel(ctx.catalogue, request.principal, body.model, 'chat', request.trace);
  const output = admitOutput(entry, '/v1/messages', body, body.max_tokens);
  const chat = toChatRequest(body, entry.capabilities);
  const admitted = admitPrompt(entry, chat);
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
      stream: body.stream === true,
      // A cache_control breakpoint asks for its prefix to stay warm: equal prefixes go to the
      // engine that holds them, whatever PROXY_PREFIX_AFFINITY_CHARS says.
      affinityKey: chat.cachePrefix ?? undefined,
    },
    messagesDialect({
      model: entry.id,
      stopSequences: body.stop_sequences,
      estimateInput: () => estimatedPromptTokens(entry, admitted.messages, admitted.promptBytes),
    }),
  );
}

/**
 * count_tokens: the engine's own tokenizer (vLLM's /tokenize, given the chat messages and tools
 * the call would send) where it has one, else the proxy's estimate; the `x-token-count-source`
 * header says which. Free: no hold, no usage record.
 */
async function handleCountTokens(ctx: ProxyContext, request: FastifyRequest, reply: FastifyReply) {
  const body = request.body as CountTokensRequest;
  const { entry } = tokenModel(ctx.catalogue, request.principal, body.model, 'chat');
  request.metricModel = entry.id;
  const admitted = admitPrompt(entry, toChatRequest(body, entry.capabilities));
  const counted = await engineTokenCount(ctx, request, reply, entry, admitted);
  const source = counted === null ? 'estimate' : 'engine';
  const inputTokens = counted ?? estimatedPromptTokens(entry, admitted.messages, admitted.promptBytes);
  return reply.header('x-token-count-source', source).send({ input_tokens: inputTokens });
}
