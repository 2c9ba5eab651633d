// Why an engine call is cancelled: the client went away, or the key it was made with was rotated
// or deleted (KEY-5). One AbortController per request links both to the engine call.
import type { FastifyReply, FastifyRequest } from 'fastify';

export class ClientClosedError extends Error {
  constructor() {
    super('The client closed the connection.');
    this.name = 'ClientClosedError';
  }
}

export interface RequestAbort {
  signal: AbortSignal;
  /** Cancels the engine call for a reason of the proxy's own (e.g. a short concurrent reserve). */
  abort(reason: unknown): void;
  dispose(): void;
}

export function linkRequestAbort(request: FastifyRequest, reply: FastifyReply): RequestAbort {
  const controller = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort(new ClientClosedError());
  };
  const onKeyDead = () => controller.abort(request.keySignal.reason);
  reply.raw.once('close', onClose);
  request.keySignal.addEventListener('abort', onKeyDead, { once: true });
  return {
    signal: controller.signal,
    abort: (reason) => controller.abort(reason),
    dispose: () => {
      reply.raw.removeListener('close', onClose);
      request.keySignal.removeEventListener('abort', onKeyDead);
    },
  };
}
