// node:http helpers: bounded body reading, JSON replies and OpenAI-shaped errors.

import type { IncomingMessage, ServerResponse } from 'node:http';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }

  get type(): string {
    if (this.status >= 500) return 'server_error';
    if (this.status === 404) return 'not_found_error';
    return 'invalid_request_error';
  }
}

export const badRequest = (message: string, param: string | null = null) =>
  new HttpError(400, message, param, 'invalid_request');

/** vLLM 0.32's error types by status (its `type` is the exception's name, its `code` the status). */
const VLLM_TYPES: Record<number, string> = {
  400: 'BadRequestError',
  404: 'NotFoundError',
  405: 'MethodNotAllowed',
  413: 'RequestEntityTooLarge',
  500: 'InternalServerError',
};

/**
 * An error body: OpenAI's shape (`type` invalid_request_error, `code` a string) for the routes that
 * imitate OpenAI's API (images, videos), vLLM's (`type` BadRequestError, `code` the status as a
 * number) for the ones vLLM serves (chat, embeddings, /tokenize), as recorded from vLLM 0.32.
 */
export function errorBody(err: HttpError, style: 'openai' | 'vllm' = 'openai'): string {
  if (style === 'vllm')
    return JSON.stringify({
      error: {
        message: err.message,
        type: VLLM_TYPES[err.status] ?? (err.status >= 500 ? 'InternalServerError' : 'BadRequestError'),
        param: err.param,
        code: err.status,
      },
    });
  return JSON.stringify({
    error: { message: err.message, type: err.type, param: err.param, code: err.code },
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

export function sendError(res: ServerResponse, err: HttpError, style: 'openai' | 'vllm' = 'openai'): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = errorBody(err, style);
  res.writeHead(err.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) {
      reject(new HttpError(413, `request body exceeds ${limit} bytes`, null, 'request_too_large'));
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new HttpError(413, `request body exceeds ${limit} bytes`, null, 'request_too_large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export function parseJsonObject(raw: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    throw badRequest('request body is not valid JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw badRequest('request body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

/** Resolves after ms, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
