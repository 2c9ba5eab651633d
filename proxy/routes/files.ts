// GET /files/<key>?expires=&sig= — media the filesystem store holds, for whoever has the signed
// URL (no API key: SPEC "the redirect target needs no key"). A wrong or expired signature is 403,
// an unknown object 404, both in the chat-completions error shape with a request id.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ApiError } from '../../core/errors.ts';
import type { ObjectStore } from '../../core/storage/store.ts';
import type { UrlSigner } from '../../core/storage/url-signer.ts';
import { errorResponse } from '../schemas/openai.ts';

const forbidden = (why: string) => new ApiError('forbidden', `This file link is ${why}.`);

export async function filesRoutes(app: FastifyInstance, opts: { store: ObjectStore; signer: UrlSigner }) {
  app.get(
    '/files/*',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'A generated file by its signed URL (no API key)',
        tags: ['media'],
        params: z.object({ '*': z.string().min(1).describe('The object key') }),
        querystring: z.object({
          expires: z.string().optional().describe('Unix seconds'),
          sig: z.string().optional().describe('HMAC-SHA256, base64url'),
        }),
        response: {
          200: z.string().describe('The file (image/png, video/mp4)'),
          403: errorResponse.describe('The link is not valid or has expired'),
          404: errorResponse.describe('The file no longer exists'),
        },
      },
    },
    async (request, reply) => {
      const key = (request.params as { '*': string })['*'];
      const { expires, sig } = request.query as { expires?: string; sig?: string };
      const verdict = opts.signer.check(key, expires, sig);
      if (verdict === 'bad') throw forbidden('not valid');
      if (verdict === 'expired') throw forbidden('expired');
      let object: Awaited<ReturnType<ObjectStore['get']>>;
      try {
        object = await opts.store.get(key);
      } catch (err) {
        if (err instanceof RangeError) throw forbidden('not valid');
        throw err;
      }
      if (object === null) throw new ApiError('not_found', 'This file no longer exists.');
      return reply
        .header('cache-control', 'private, max-age=3600')
        .header('content-length', object.size)
        .type(object.contentType)
        .send(object.body);
    },
  );
}
