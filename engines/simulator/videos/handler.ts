// /v1/videos routes, shaped like OpenAI's Videos API. POST accepts JSON or multipart (the official
// client always sends multipart; an `input_reference` file makes it image-to-video).

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SimContext } from '../context.ts';
import { chooseVideoFailure } from '../failure.ts';
import { badRequest, HttpError, headerValue, parseJsonObject, sendJson, sleep } from '../http.ts';
import { imageSalt, looksLikeImage, parseSize } from '../images.ts';
import { gradientPng } from '../media/png.ts';
import { formSummary, multipartBoundary, multipartFields, parseMultipart } from '../multipart.ts';
import type { VideoJob } from './jobs.ts';

const MAX_SECONDS = 60;

function readCreateBody(ctx: SimContext, req: IncomingMessage, raw: Buffer) {
  const boundary = multipartBoundary(req.headers['content-type']);
  if (!boundary) return { fields: parseJsonObject(raw) as Record<string, unknown>, salt: '' };
  const parts = parseMultipart(raw, boundary);
  ctx.noteForm(req, formSummary(parts));
  const image = parts.find((p) => p.name === 'input_reference' && p.filename !== null);
  if (image && !looksLikeImage(image.data)) {
    throw badRequest('input_reference must be a PNG, JPEG, WebP or GIF file', 'input_reference');
  }
  const salt = image ? imageSalt(image) : '';
  return { fields: multipartFields(parts) as Record<string, unknown>, salt };
}

export async function handleCreateVideo(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  _params: Record<string, string>,
  raw: Buffer,
) {
  const { fields, salt } = readCreateBody(ctx, req, raw);
  // As OpenAI's API takes it: a create resent with the same key answers the job made the first time.
  const idempotencyKey = headerValue(req, 'idempotency-key');
  if (typeof fields.prompt !== 'string' || fields.prompt === '')
    throw badRequest('prompt is required', 'prompt');
  const model = typeof fields.model === 'string' && fields.model !== '' ? fields.model : 'sora-2';
  const seconds = fields.seconds === undefined ? 4 : Number(fields.seconds);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_SECONDS) {
    throw badRequest(`seconds must be a number in (0, ${MAX_SECONDS}]`, 'seconds');
  }
  const size = typeof fields.size === 'string' ? fields.size : '720x1280';
  const { width, height } = parseSize(size);
  const ref = fields.input_reference;
  const refSalt = ref && typeof ref === 'object' ? JSON.stringify(ref) : '';
  const job = ctx.videos.create({
    model,
    prompt: fields.prompt,
    seconds,
    size: `${width}x${height}`,
    width,
    height,
    queueMs: ctx.options.videoQueueMs,
    renderMs: seconds * ctx.options.videoMsPerSecond,
    willFail: chooseVideoFailure(headerValue(req, 'x-sim-fail'), ctx.options.failVideo),
    salt: salt || refSalt,
    ...(idempotencyKey ? { idempotencyKey } : {}),
  });
  if (job.willFail && job.creates === 1) ctx.metrics.injectedFailures.video++;
  if (ctx.options.videoCreateMs > 0) await sleep(ctx.options.videoCreateMs);
  if (ctx.options.dropVideoCreates > 0) {
    ctx.options.dropVideoCreates--;
    res.destroy();
    return;
  }
  sendJson(res, 200, ctx.videos.view(job));
}

function findJob(ctx: SimContext, params: Record<string, string>): VideoJob {
  const job = ctx.videos.get(params.id ?? '');
  if (!job) throw new HttpError(404, `no video with id ${params.id}`, 'video_id', 'not_found');
  return job;
}

export async function handleGetVideo(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  params: Record<string, string>,
) {
  const job = findJob(ctx, params);
  job.polls.push({ atMs: Date.now(), by: headerValue(req, 'x-modelplane-replica') ?? '' });
  sendJson(res, 200, ctx.videos.view(job));
}

export async function handleDeleteVideo(
  ctx: SimContext,
  _req: IncomingMessage,
  res: ServerResponse,
  params: Record<string, string>,
) {
  const job = findJob(ctx, params);
  ctx.videos.delete(job.id);
  sendJson(res, 200, { id: job.id, object: 'video.deleted', deleted: true });
}

export async function handleListVideos(ctx: SimContext, req: IncomingMessage, res: ServerResponse) {
  const url = new URL(req.url ?? '/', 'http://sim');
  const limit = Number(url.searchParams.get('limit') ?? 20);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw badRequest('limit must be 1..100', 'limit');
  const order = url.searchParams.get('order') === 'asc' ? 'asc' : 'desc';
  const after = url.searchParams.get('after') ?? undefined;
  const { jobs, hasMore } = ctx.videos.list({ limit, order, ...(after ? { after } : {}) });
  const data = jobs.map((j) => ctx.videos.view(j));
  sendJson(res, 200, {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
    has_more: hasMore,
  });
}

export async function handleVideoContent(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  params: Record<string, string>,
) {
  const job = findJob(ctx, params);
  const status = ctx.videos.view(job).status;
  if (status !== 'completed') {
    throw new HttpError(
      404,
      `video ${job.id} is ${status}; content is available once completed`,
      'video_id',
      'video_not_ready',
    );
  }
  const variant = new URL(req.url ?? '/', 'http://sim').searchParams.get('variant') ?? 'video';
  let body: Buffer;
  let contentType: string;
  if (variant === 'video') {
    body = ctx.videos.content(job);
    contentType = 'video/mp4';
  } else if (variant === 'thumbnail') {
    body = gradientPng(ctx.videos.hue(job), 160, Math.max(1, Math.round((160 * job.height) / job.width)));
    contentType = 'image/png';
  } else {
    throw badRequest('variant must be video or thumbnail', 'variant');
  }
  res.writeHead(200, { 'content-type': contentType, 'content-length': body.length });
  res.end(body);
}
