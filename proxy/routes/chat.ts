// POST /v1/chat/completions (CHAT-1..4): validate, resolve the model, then the text call's one
// money path (../calls/text-call.ts) with the answer passed through in this dialect
// (../dialects/openai/text.ts): the engine's JSON (model echoed canonical) or its relayed stream.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { invalidRequest } from '../../core/errors.ts';
import { ENDPOINT_REQUESTS } from '../calls/endpoints.ts';
import { tokenModel } from '../calls/resolve-model.ts';
import { runTextCall } from '../calls/text-call.ts';
import { admitOutput, admitPrompt } from '../calls/text-door.ts';
import type { ProxyContext } from '../context.ts';
import { chatDialect } from '../dialects/openai/text.ts';
import {
  type ChatCompletionRequest,
  chatCompletion,
  chatCompletionChunk,
  commonErrors,
} from '../schemas/openai.ts';

export async function chatRoutes(app: FastifyInstance, opts: { ctx: ProxyContext }) {
  const { ctx } = opts;
  app.post(
    '/chat/completions',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Create a chat completion',
        tags: ['chat-completions dialect'],
        body: ENDPOINT_REQUESTS['/v1/chat/completions'],
        charged: true,
        response: { 200: chatCompletion, ...commonErrors },
        stream: chatCompletionChunk,
      },
    },
    (request, reply) => handleChat(ctx, request, reply),
  );
}

function handleChat(ctx: ProxyContext, request: FastifyRequest, reply: FastifyReply) {
  const body = request.body as ChatCompletionRequest;
  const { entry, price } = tokenModel(ctx.catalogue, request.principal, body.model, 'chat', request.trace);
  const output = admitOutput(
    entry,
    '/v1/chat/completions',
    body,
    entry.maxOutputTokens ?? ctx.config.PROXY_DEFAULT_MAX_TOKENS,
  );
  if (body.min_tokens != null && body.min_tokens > output.perChoice)
    throw invalidRequest(
      output.asked
        ? `min_tokens must be at most ${output.field} (${output.perChoice}), got ${body.min_tokens}.`
        : `min_tokens must be at most the default output bound, ${output.perChoice} tokens (or set max_tokens), got ${body.min_tokens}.`,
      'min_tokens',
    );
  return runTextCall(
    ctx,
    request,
    reply,
    {
      entry,
      price,
      // Chat is the form every dialect is translated into: the door reads the body as it came.
      request: admitPrompt(entry, { messages: body.messages, fields: body }),
      output,
      n: body.n ?? 1,
      stream: body.stream === true,
      affinityKey: undefined,
    },
    chatDialect(entry, body.stream_options),
  );
}
