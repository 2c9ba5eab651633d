// POST /v1/images/generations (JSON) and POST /v1/images/edits (multipart): real PNG gradients
// whose colour derives from the prompt (and, for edits, the input images), as b64_json (default) or
// as URLs served by the simulator at GET /files/<id>.png.

import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { clientGone, publicBaseUrl, type SimContext } from './context.ts';
import { chooseFailure } from './failure.ts';
import { hash53 } from './hash.ts';
import { badRequest, HttpError, headerValue, parseJsonObject, sendError, sendJson, sleep } from './http.ts';
import { gradientPng } from './media/png.ts';
import { formSummary, multipartBoundary, multipartFields, parseMultipart } from './multipart.ts';

const MAX_SIDE = 4096;
const MAX_EDIT_FILES = 10;
const MAX_EDIT_FILE_BYTES = 20 * 1024 * 1024;

interface ImageJob {
  model: string;
  prompt: string;
  n: number;
  width: number;
  height: number;
  format: 'url' | 'b64_json';
  /** Extra seed material (hash of input images for edits). */
  salt: string;
}

export function parseSize(raw: unknown, param = 'size'): { width: number; height: number } {
  if (raw === undefined || raw === null || raw === 'auto') return { width: 1024, height: 1024 };
  const m = typeof raw === 'string' ? /^(\d{1,5})x(\d{1,5})$/.exec(raw) : null;
  const width = Number(m?.[1]);
  const height = Number(m?.[2]);
  if (!m || width < 1 || height < 1 || width > MAX_SIDE || height > MAX_SIDE) {
    throw badRequest(`${param} must be WIDTHxHEIGHT (each 1..${MAX_SIDE}) or auto`, param);
  }
  return { width, height };
}

function parseJob(fields: Record<string, unknown>, salt: string): ImageJob {
  if (typeof fields.model !== 'string' || fields.model === '') throw badRequest('model is required', 'model');
  if (typeof fields.prompt !== 'string' || fields.prompt === '')
    throw badRequest('prompt is required', 'prompt');
  const n = fields.n === undefined || fields.n === null ? 1 : Number(fields.n);
  if (!Number.isInteger(n) || n < 1 || n > 10) throw badRequest('n must be an integer between 1 and 10', 'n');
  const format = fields.response_format ?? 'b64_json';
  if (format !== 'url' && format !== 'b64_json') {
    throw badRequest('response_format must be url or b64_json', 'response_format');
  }
  return { model: fields.model, prompt: fields.prompt, n, ...parseSize(fields.size), format, salt };
}

async function respondImages(ctx: SimContext, req: IncomingMessage, res: ServerResponse, job: ImageJob) {
  const failure = chooseFailure(headerValue(req, 'x-sim-fail'), ctx.options);
  const signal = clientGone(res);
  try {
    await sleep(ctx.options.imageMs, signal);
  } catch {
    ctx.metrics.aborted++;
    return;
  }
  if (failure) {
    const mode = failure === 'reset' ? 'reset' : 'before-first-byte';
    ctx.metrics.injectedFailures[mode]++;
    if (mode === 'reset') res.destroy();
    else sendError(res, new HttpError(500, 'simulated engine failure', null, 'server_error'));
    return;
  }
  const base = publicBaseUrl(req);
  const made = ctx.options.maxImages > 0 ? Math.min(job.n, ctx.options.maxImages) : job.n;
  const data = Array.from({ length: made }, (_, i) => {
    const hue = hash53(`${job.prompt}\u0000${job.salt}`, i) % 360;
    const png = gradientPng(hue, job.width, job.height);
    if (job.format === 'b64_json') return { b64_json: png.toString('base64'), revised_prompt: job.prompt };
    return { url: `${base}/files/${ctx.files.put(png, 'image/png', 'png')}`, revised_prompt: job.prompt };
  });
  sendJson(res, 200, {
    created: Math.floor(Date.now() / 1000),
    data,
    size: `${job.width}x${job.height}`,
    output_format: 'png',
  });
  ctx.metrics.recordFinished(job.model, ['stop']);
}

export async function handleImageGenerations(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  _params: Record<string, string>,
  raw: Buffer,
) {
  const body = parseJsonObject(raw);
  if (body.n !== undefined && typeof body.n !== 'number')
    throw badRequest('n must be an integer between 1 and 10', 'n');
  await respondImages(ctx, req, res, parseJob(body, ''));
}

const IMAGE_MAGIC: Array<[string, number[]]> = [
  ['png', [0x89, 0x50, 0x4e, 0x47]],
  ['jpeg', [0xff, 0xd8, 0xff]],
  ['webp', [0x52, 0x49, 0x46, 0x46]],
  ['gif', [0x47, 0x49, 0x46, 0x38]],
];

export function looksLikeImage(data: Buffer): boolean {
  return IMAGE_MAGIC.some(([, magic]) => magic.every((b, i) => data[i] === b));
}

export async function handleImageEdits(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  _params: Record<string, string>,
  body: Buffer,
) {
  const boundary = multipartBoundary(req.headers['content-type']);
  if (!boundary) throw badRequest('images/edits needs a multipart/form-data body');
  const parts = parseMultipart(body, boundary);
  const images = parts.filter((p) => p.name === 'image' || p.name === 'image[]');
  if (images.length === 0) throw badRequest('at least one image file is required', 'image');
  if (images.length > MAX_EDIT_FILES) throw badRequest(`at most ${MAX_EDIT_FILES} images per edit`, 'image');
  for (const [i, img] of images.entries()) {
    if (img.data.length > MAX_EDIT_FILE_BYTES)
      throw badRequest('each image must be at most 20 MB', `image[${i}]`);
    if (!looksLikeImage(img.data))
      throw badRequest('image must be a PNG, JPEG, WebP or GIF file', `image[${i}]`);
  }
  ctx.noteForm(req, formSummary(parts));
  const salt = images.map(imageSalt).join(',');
  await respondImages(ctx, req, res, parseJob(multipartFields(parts), salt));
}

/**
 * Seed material from an input image: its size and its first and last 64 KB. Hashing all of it
 * (10 × 20 MB an edit) held the simulator's event loop for a third of a second, stalling every
 * other request it served meanwhile.
 */
export function imageSalt(img: { data: Buffer }): string {
  const h = createHash('sha1').update(String(img.data.length));
  if (img.data.length <= 128 * 1024) h.update(img.data);
  else h.update(img.data.subarray(0, 64 * 1024)).update(img.data.subarray(img.data.length - 64 * 1024));
  return h.digest('hex');
}

export async function handleFile(
  ctx: SimContext,
  _req: IncomingMessage,
  res: ServerResponse,
  params: Record<string, string>,
) {
  const file = ctx.files.get(params.name ?? '');
  if (!file) throw new HttpError(404, 'file not found or expired', null, 'not_found');
  res.writeHead(200, { 'content-type': file.contentType, 'content-length': file.data.length });
  res.end(file.data);
}
