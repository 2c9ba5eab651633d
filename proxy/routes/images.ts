// POST /v1/images/generations (IMG-*): image models only; the engine request, the money and the
// answer are ../calls/image-call.ts, shared with /v1/images/edits (./image-edits.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { generateImages } from '../calls/image-call.ts';
import { mediaModel } from '../calls/resolve-model.ts';
import type { ProxyContext } from '../context.ts';
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

function handleGenerations(ctx: ProxyContext, request: FastifyRequest, reply: FastifyReply) {
  const body = request.body as ImageGenerationRequest;
  const model = mediaModel(ctx.catalogue, request.principal, body.model, 'image', request.trace);
  request.metricModel = model.entry.id;
  return generateImages(ctx, request, reply, model, body);
}
