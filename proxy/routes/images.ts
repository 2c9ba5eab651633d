// POST /v1/images/generations and /v1/images/edits (IMG-*): image models only, charged per image
// through a hold and a settlement like any call (a failed engine call costs nothing; fewer images
// than asked are charged as returned). The engine is always asked for b64_json; `url` answers are
// links to our own store, signed and expiring (MEDIA_IMAGE_TTL_MS), the files deleted after.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { imageCost } from '../../core/billing/index.ts';
import type { CatalogueEntry, ImagePrice } from '../../core/catalogue/index.ts';
import { ApiError } from '../../core/errors.ts';
import type { CallCharge, Quote } from '../billing/charge.ts';
import type { ProxyContext } from '../context.ts';
import { callEngine, type EngineCall, engineClientError } from '../engine/call.ts';
import type { Cancel } from '../engine/cancel.ts';
import { deleteLater } from '../media/media-sweeper.ts';
import { linkRequestAbort } from '../request-abort.ts';
import { type ImageGenerationRequest, imageGenerationRequest, imagesResponse } from '../schemas/media.ts';
import { commonErrors } from '../schemas/openai.ts';
import { handleImageEdit } from './image-edits.ts';
import { mediaModel } from './resolve-model.ts';
import { requestFailure } from './text-call.ts';

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
        response: { 200: imagesResponse, ...commonErrors },
      },
    },
    (request, reply) => handleGenerations(ctx, request, reply),
  );
  await app.register(async (edits) => handleImageEdit(edits, ctx));
}

/** All or nothing: the hold is the whole `n` images (no fewer images are made to fit a balance). */
export function imageQuote(price: ImagePrice, n: number): Quote {
  const cost = imageCost(price, n);
  return { min: cost, max: cost, full: n, allowance: (held) => (held >= cost ? n : 0) };
}

async function handleGenerations(ctx: ProxyContext, request: FastifyRequest, reply: FastifyReply) {
  const body = request.body as ImageGenerationRequest;
  const { entry, price } = mediaModel(ctx.catalogue, request.principal, body.model, 'image');
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
      }),
  });
}

export interface ImageCall {
  entry: CatalogueEntry;
  price: ImagePrice;
  n: number;
  format: 'url' | 'b64_json';
  /** Sends the engine request (JSON or multipart). */
  call(cancel: Cancel): Promise<EngineCall>;
}

interface EngineImage {
  b64_json?: unknown;
  revised_prompt?: unknown;
}

/** The money and the answer of an image call, generation or edit alike. */
export async function runImageCall(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  c: ImageCall,
): Promise<FastifyReply> {
  const abort = linkRequestAbort(request, reply);
  let charge: CallCharge | undefined;
  try {
    charge = ctx.billing.open(
      {
        principal: request.principal,
        model: c.entry.id,
        kind: 'image',
        requestId: request.id,
        cancel: abort.cancel,
      },
      imageQuote(c.price, c.n),
    );
    const images = await charge.hold({
      run: async (_allowance, cancel) => readImages(await c.call(cancel), c.entry.id),
      discard: () => {},
    });
    const made = images.slice(0, c.n);
    const data = await Promise.all(made.map((img, i) => answerImage(ctx, request, img, i, c.format)));
    charge.settle(imageCost(c.price, made.length), { images: made.length }, () => {
      abort.dispose();
      ctx.metrics.images.inc({ model: c.entry.id }, made.length);
      reply.send({ created: Math.floor(Date.now() / 1000), data });
    });
    return reply;
  } catch (err) {
    abort.dispose();
    charge?.release();
    throw requestFailure(err, abort);
  }
}

async function readImages(call: EngineCall, model: string): Promise<EngineImage[]> {
  try {
    if (call.statusCode >= 400) throw await engineClientError(call, model);
    const json = JSON.parse((await call.body.bytes()).toString('utf8')) as { data?: unknown };
    if (!Array.isArray(json.data)) throw new Error('engine answer has no data');
    return json.data as EngineImage[];
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError('server_error', 'The engine sent an unreadable response.', { cause: err });
  } finally {
    call.release();
  }
}

async function answerImage(
  ctx: ProxyContext,
  request: FastifyRequest,
  img: EngineImage,
  i: number,
  format: 'url' | 'b64_json',
): Promise<{ url?: string; b64_json?: string; revised_prompt?: string }> {
  if (typeof img.b64_json !== 'string') throw new ApiError('server_error', 'The engine sent no image.');
  const revised = typeof img.revised_prompt === 'string' ? { revised_prompt: img.revised_prompt } : {};
  if (format === 'b64_json') return { b64_json: img.b64_json, ...revised };
  const key = `images/${request.id}-${i}.png`;
  const expiresAt = Date.now() + ctx.config.MEDIA_IMAGE_TTL_MS;
  await ctx.media.store.put(key, Buffer.from(img.b64_json, 'base64'), 'image/png');
  await deleteLater(ctx.media.redis, key, expiresAt);
  return { url: await ctx.media.store.signedUrl(key, expiresAt, publicOrigin(ctx, request)), ...revised };
}

/** Where clients reach this proxy: PROXY_PUBLIC_URL, else the request's own scheme and host. */
export function publicOrigin(ctx: ProxyContext, request: FastifyRequest): string {
  return ctx.config.PROXY_PUBLIC_URL ?? `${request.protocol}://${request.host}`;
}
