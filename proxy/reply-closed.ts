// When a response is over, for whoever must act then (the request's abort link, the key lease's
// untracking, the request's trace). A file of its own, importing nothing of the proxy's rooms, so
// tracing/ can use it without reaching engine/ through ./request-abort.ts (no folder loop).
import type { FastifyReply } from 'fastify';

/**
 * Calls `f` once the response is closed — finished, or cut by the client — and at once if it is
 * already: a listener attached after an await would otherwise miss a 'close' that has been and gone.
 */
export function whenClosed(reply: FastifyReply, f: () => void): void {
  if (reply.raw.destroyed) f();
  else reply.raw.once('close', f);
}
