// POST /v1/images/generations (IMG-*): image models only; the money and the answer are
// ../calls/image-call.ts, shared with /v1/images/edits (./image-edits.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { runImageCall } from '../calls/image-call.ts';
import { mediaModel } from '../calls/resolve-model.ts';
import type { ProxyContext } from '../context.ts';
import { callEngine } from '../engine/call.ts';
import { type ImageGenerationRequest, imageGenerationRequest, imagesResponse } from '../schemas/media.ts';
import { commonErrors } from '../schemas/openai.ts';

export async function imagesRoutes(app: FastifyInstance, opts: { ctx: ProxyContext }) {
  const { ctx } = opts;
  app.post(
    '/images/generations',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Generate images',
        tags: ['media'],
        body: imageGenerationRequest,
        charged: true,
        response: { 200: imagesResponse, ...commonErrors },
      },
    },
    (request, reply) => handleGenerations(ctx, request, reply),
  );
}

async function handleGenerations(ctx: ProxyContext, request: FastifyRequest, reply: FastifyReply) {
  const body = request.body as ImageGenerationRequest;
  const { entry, price } = mediaModel(ctx.catalogue, request.principal, body.model, 'image', request.trace);
  request.metricModel = entry.id;
  const n = body.n ?? 1;
  const payload: Record<string, unknown> = {
    ...body,
    model: entry.servedName ?? entry.id,
    n,
    response_format: 'b64_json',
  };
  return runImageCall(ctx, request, reply, {
    entry,
    price,
    n,
    format: body.response_format ?? 'url',
    call: (cancel) =>
      callEngine(ctx.engine, {
        entry,
        path: '/v1/images/generations',
        payload: JSON.stringify(payload),
        cancel,
        tried: new Set(),
        trace: request.trace,
      }),
  });
}
