// An image call, generation or edit alike (IMG-*), through the one metered lifecycle
// (./metered.ts): charged per image through a hold and a settlement like any call (a failed engine
// call costs nothing; fewer images than asked are charged as returned). The engine request is built
// here, as ./text-call.ts builds its own: a generation's JSON, or an edit's multipart form streamed
// from the spooled upload (./image-edit-form.ts). The engine is always asked for b64_json; `url`
// answers are links to our own store, signed and expiring (MEDIA_IMAGE_TTL_MS), the files deleted
// after.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { imageCost } from '../../core/billing/index.ts';
import type { CatalogueEntry, ImagePrice } from '../../core/catalogue/index.ts';
import { ApiError } from '../../core/errors.ts';
import { callCost } from '../billing/call-cost.ts';
import type { ProxyContext } from '../context.ts';
import { callEngine, type EngineCall, engineClientError } from '../engine/call.ts';
import type { Cancel } from '../engine/cancel.ts';
import { deleteLater } from '../media/media-sweeper.ts';
import { publicOrigin } from '../media/public-origin.ts';
import type { SpooledFile } from '../media/upload-form.ts';
import type { ImageEditFields, ImageGenerationRequest } from '../schemas/media.ts';
import { engineEditForm } from './image-edit-form.ts';
import { meteredCall, type Quote } from './metered.ts';

/** All or nothing: the hold is the whole `n` images (no fewer images are made to fit a balance). */
export function imageQuote(price: ImagePrice, n: number): Quote {
  const cost = imageCost(price, n);
  return { min: cost, max: cost, full: n, allowance: (held) => (held >= cost ? n : 0) };
}

interface ImageModel {
  entry: CatalogueEntry;
  price: ImagePrice;
}

interface ImageCall extends ImageModel {
  n: number;
  format: 'url' | 'b64_json';
  /** Sends the engine request (JSON or multipart). */
  call(cancel: Cancel): Promise<EngineCall>;
}

/**
 * POST /v1/images/generations: the request's own fields passed through, the model named as the
 * engine serves it, `n` always sent, the answer always asked for as b64_json.
 */
export function generateImages(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  m: ImageModel,
  body: ImageGenerationRequest,
): Promise<FastifyReply> {
  const n = body.n ?? 1;
  const payload = JSON.stringify({
    ...body,
    model: m.entry.servedName ?? m.entry.id,
    n,
    response_format: 'b64_json',
  });
  return runImageCall(ctx, request, reply, {
    ...m,
    n,
    format: body.response_format ?? 'url',
    call: (cancel) =>
      callEngine(ctx.engine, {
        entry: m.entry,
        path: '/v1/images/generations',
        payload,
        cancel,
        tried: new Set(),
        trace: request.trace,
        account: request.principal.accountId,
        bytes: payload.length,
      }),
  });
}

/** POST /v1/images/edits: the spooled images and mask streamed to the engine as a fresh form per attempt. */
export function editImages(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  m: ImageModel,
  fields: ImageEditFields,
  files: readonly SpooledFile[],
): Promise<FastifyReply> {
  const n = fields.n ?? 1;
  return runImageCall(ctx, request, reply, {
    ...m,
    n,
    format: fields.response_format ?? 'url',
    call: (cancel) =>
      callEngine(ctx.engine, {
        entry: m.entry,
        path: '/v1/images/edits',
        payload: () => engineEditForm(m.entry, { ...fields, n }, files),
        cancel,
        tried: new Set(),
        // The spooled files wait on disk, not in memory: the queue's byte bound does not count them.
        account: request.principal.accountId,
      }),
  });
}

interface EngineImage {
  b64_json?: unknown;
  revised_prompt?: unknown;
}

/** The money and the answer of an image call, generation or edit alike. */
async function runImageCall(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  c: ImageCall,
): Promise<FastifyReply> {
  return meteredCall(ctx, request, reply, {
    kind: 'image',
    model: c.entry.id,
    quote: imageQuote(c.price, c.n),
    run: async (_allowance, cancel) => readImages(await c.call(cancel), c.entry.id),
    bill: async (images) => {
      const made = images.slice(0, c.n);
      const data = await Promise.all(made.map((img, i) => answerImage(ctx, request, img, i, c.format)));
      const cost = imageCost(c.price, made.length);
      // OpenAI's image response has a usage object (token counts, for its own models); ours says
      // what the images cost (../billing/call-cost.ts).
      const usage = callCost(request, cost);
      return {
        cost,
        counts: { images: made.length },
        deliver: () => {
          ctx.metrics.images.inc({ model: c.entry.id }, made.length);
          reply.send({ created: Math.floor(Date.now() / 1000), data, usage });
        },
      };
    },
  });
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
