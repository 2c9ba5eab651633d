// POST /v1/embeddings (EMB-1, EMB-2): validate, resolve the model, bound the inputs and quote per
// input token; the call itself is ../calls/embeddings-call.ts.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { embeddingPromptTokens, textQuote } from '../billing/text-quote.ts';
import { checkEmbeddingInputs } from '../calls/context-fit.ts';
import { embeddingsCall } from '../calls/embeddings-call.ts';
import { ENDPOINT_REQUESTS } from '../calls/endpoints.ts';
import { tokenModel } from '../calls/resolve-model.ts';
import type { ProxyContext } from '../context.ts';
import { type EmbeddingsRequest, embeddingsResponse } from '../schemas/embeddings.ts';
import { commonErrors } from '../schemas/openai.ts';

export async function embeddingsRoutes(app: FastifyInstance, opts: { ctx: ProxyContext }) {
  const { ctx } = opts;
  app.post(
    '/embeddings',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Create embeddings',
        tags: ['chat-completions dialect'],
        body: ENDPOINT_REQUESTS['/v1/embeddings'],
        charged: true,
        response: { 200: embeddingsResponse, ...commonErrors },
      },
    },
    (request, reply) => handleEmbeddings(ctx, request, reply),
  );
}

async function handleEmbeddings(ctx: ProxyContext, request: FastifyRequest, reply: FastifyReply) {
  const body = request.body as EmbeddingsRequest;
  const { entry, price } = tokenModel(
    ctx.catalogue,
    request.principal,
    body.model,
    'embedding',
    request.trace,
  );
  request.metricModel = entry.id;
  checkEmbeddingInputs(entry, body.input);
  // Token ids and text alike: the serialized input's bytes bound its token count from above.
  const inputs = Array.isArray(body.input) ? body.input.length : 1;
  const quote = textQuote(
    price,
    embeddingPromptTokens(Buffer.byteLength(JSON.stringify(body.input)), inputs),
    0,
  );
  return embeddingsCall(ctx, request, reply, { entry, price, body, inputs, quote });
}
