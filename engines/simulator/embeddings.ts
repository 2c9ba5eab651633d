// POST /v1/embeddings: deterministic unit vectors derived from each input, float or base64
// (little-endian float32, as OpenAI encodes it). Token arrays count one token per element.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { clientGone, type SimContext } from './context.ts';
import { chooseFailure } from './failure.ts';
import { hash53, seededRandom } from './hash.ts';
import { badRequest, HttpError, headerValue, parseJsonObject, sendError, sendJson, sleep } from './http.ts';
import { countTokens } from './tokenizer.ts';

type EmbeddingInput = { key: string; tokens: number };

function isTokenArray(v: unknown): v is number[] {
  return Array.isArray(v) && v.length > 0 && v.every((t) => Number.isInteger(t) && t >= 0);
}

function parseInputs(raw: unknown): EmbeddingInput[] {
  const fromText = (s: string): EmbeddingInput => ({ key: `t:${s}`, tokens: countTokens(s) });
  const fromTokens = (a: number[]): EmbeddingInput => ({ key: `i:${a.join(',')}`, tokens: a.length });
  if (typeof raw === 'string') {
    if (raw === '') throw badRequest('input must not be empty', 'input');
    return [fromText(raw)];
  }
  if (isTokenArray(raw)) return [fromTokens(raw)];
  if (Array.isArray(raw) && raw.length > 0 && raw.length <= 2048) {
    return raw.map((item, i) => {
      if (typeof item === 'string' && item !== '') return fromText(item);
      if (isTokenArray(item)) return fromTokens(item);
      throw badRequest('each input must be a non-empty string or token array', `input[${i}]`);
    });
  }
  throw badRequest('input must be a string, an array of 1..2048 strings, or token arrays', 'input');
}

/** A unit vector from the input: PRNG normals seeded by the input's hash, float32-rounded. */
export function embed(key: string, dimensions: number): Float32Array {
  const random = seededRandom(hash53(key));
  const v = new Float32Array(dimensions);
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    const x = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    v[i] = x;
    norm += x * x;
  }
  norm = Math.sqrt(norm) || 1;
  for (let i = 0; i < dimensions; i++) v[i] = v[i]! / norm;
  return v;
}

export async function handleEmbeddings(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  _params: Record<string, string>,
  raw: Buffer,
): Promise<void> {
  const body = parseJsonObject(raw);
  if (typeof body.model !== 'string' || body.model === '') throw badRequest('model is required', 'model');
  const model = body.model;
  const inputs = parseInputs(body.input);
  const maxDims = ctx.options.embeddingDimensions;
  const dims = body.dimensions ?? maxDims;
  if (typeof dims !== 'number' || !Number.isInteger(dims) || dims < 1 || dims > maxDims) {
    throw badRequest(`dimensions must be an integer between 1 and ${maxDims}`, 'dimensions');
  }
  const format = body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64')
    throw badRequest('encoding_format must be float or base64', 'encoding_format');
  const failure = chooseFailure(headerValue(req, 'x-sim-fail'), ctx.options);

  const signal = clientGone(res);
  const release = await ctx.scheduler.acquire(model, signal).catch((err: unknown) => {
    if (signal.aborted) ctx.metrics.aborted++;
    throw err;
  });
  try {
    const promptTokens = inputs.reduce((sum, i) => sum + i.tokens, 0);
    ctx.metrics.recordPrompt(model, promptTokens, 0);
    await sleep(ctx.options.embeddingMs, signal);
    if (failure) {
      const mode = failure === 'reset' ? 'reset' : 'before-first-byte';
      ctx.metrics.injectedFailures[mode]++;
      if (mode === 'reset') res.destroy();
      else sendError(res, new HttpError(500, 'simulated engine failure', null, 'server_error'));
      return;
    }
    const data = inputs.map((input, index) => {
      const v = embed(input.key, dims);
      const embedding = format === 'float' ? Array.from(v) : Buffer.from(v.buffer).toString('base64');
      return { object: 'embedding', index, embedding };
    });
    sendJson(res, 200, {
      object: 'list',
      data,
      model,
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    });
    ctx.metrics.recordFinished(model, ['stop']);
  } catch (err) {
    if (signal.aborted) {
      ctx.metrics.aborted++;
      return;
    }
    throw err;
  } finally {
    release();
  }
}
