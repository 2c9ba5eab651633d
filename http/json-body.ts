// The JSON body parser of every server here (proxy and console): every failure is a 400 naming what is wrong, never a 500 later.
// Nesting is bounded while the text is still text (the proxy's PROXY_JSON_MAX_DEPTH): JSON.parse takes
// 100,000 levels, but the first recursive step after it (zod, JSON.stringify of the messages)
// overflows the stack. `__proto__` and `constructor.prototype` keys are refused by name
// (secure-json-parse), not called "not valid JSON". Bodies of other types get 415, except where a
// route registers its own parser (multipart uploads). A route that takes no body (a cancel) says so
// in its config: an empty body sent as application/json is then no body — what openai-python sends
// on every request, and what OpenAI's own reference curl for a cancel sends.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import sjson from 'secure-json-parse';
import { ApiError, invalidRequest } from '../core/errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route takes no body: an empty one is none, not "The request body is empty". */
    bodyless?: boolean;
  }
}

/** The deepest `[`/`{` nesting in JSON text, strings skipped; stops counting past `limit`. */
export function jsonDepth(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      // a string: to its closing quote, stepping over escapes
      for (i++; i < text.length && text.charCodeAt(i) !== 34; i++) if (text.charCodeAt(i) === 92) i++;
    } else if (c === 91 || c === 123) {
      if (++depth > max) {
        max = depth;
        if (max > limit) return max;
      }
    } else if (c === 93 || c === 125) depth--;
  }
  return max;
}

export function parseJsonBody(text: string, maxDepth: number): unknown {
  if (text.trim() === '') throw invalidRequest('The request body is empty: send a JSON object.');
  if (jsonDepth(text, maxDepth) > maxDepth)
    throw invalidRequest(`The request body's JSON is nested more than ${maxDepth} levels deep.`);
  try {
    return sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    const message = (err as Error).message;
    if (/prototype property/.test(message))
      throw invalidRequest(
        `The request body has a '__proto__' or 'constructor.prototype' key, which is not accepted.`,
      );
    throw invalidRequest(`The request body is not valid JSON: ${message}`, undefined);
  }
}

export const jsonBodyPlugin = fp(
  async (app: FastifyInstance, opts: { maxDepth: number }) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      // An unknown route (or a known path with the wrong method) is answered 404/405 whatever it sent.
      if (request.is404) return done(null, undefined);
      if (request.routeOptions.config.bodyless === true && (body as string).trim() === '')
        return done(null, undefined);
      try {
        done(null, parseJsonBody(body as string, opts.maxDepth));
      } catch (err) {
        done(err as ApiError, undefined);
      }
    });
    // Anything else (text/plain, forms, a missing type): 415 naming what is taken.
    app.addContentTypeParser('*', (request, _payload, done) => {
      if (request.is404) return done(null, undefined);
      const type = request.headers['content-type'];
      done(
        new ApiError(
          'unsupported_media_type',
          `Content-Type ${type ? `'${type}'` : 'missing'}: send the body as application/json.`,
        ),
        undefined,
      );
    });
  },
  { name: 'json-body' },
);
