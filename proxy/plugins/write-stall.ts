// A reply whose client stops reading — a large JSON answer (embeddings by the thousand), a /files
// download — is ended after PROXY_STREAM_STALL_MS without progress, as an event stream is
// (calls/relay.ts), so it cannot pin its socket, its file and its buffered bytes for ever.
// Socket timeouts cannot say it: connectionTimeout is 0 because an engine may think for minutes
// before a reply's first byte. So the guard watches what the kernel takes from the socket, and
// only for replies too large for the socket buffers to absorb (a smaller one pins nothing once
// written: the keep-alive timeout closes its socket).
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/** Payloads from this size (and every stream) are watched. */
export const WATCHED_BYTES = 64 * 1024;

/**
 * Calls `onStall` once if, for `stallMs`, bytes wait in `res`'s socket and none of them leave;
 * stops when the reply is flushed or closed. Checked four times per `stallMs`, so a stall is
 * ended within 1.25 × `stallMs`.
 */
export function watchWriteStall(res: ServerResponse, stallMs: number, onStall: () => void): void {
  const socket = res.socket;
  if (socket === null) return;
  // Bytes the kernel has taken: those handed to the socket less those still waiting in it.
  const flushed = () => socket.bytesWritten - socket.writableLength;
  let last = flushed();
  let lastMovedAt = Date.now();
  const timer = setInterval(
    () => {
      if (res.writableFinished || socket.destroyed) return stop();
      const now = flushed();
      if (now !== last || socket.writableLength === 0) {
        last = now;
        lastMovedAt = Date.now();
      } else if (Date.now() - lastMovedAt >= stallMs) {
        stop();
        onStall();
      }
    },
    Math.max(10, Math.floor(stallMs / 4)),
  );
  timer.unref();
  const stop = () => {
    clearInterval(timer);
    res.off('close', stop);
  };
  res.on('close', stop);
}

const watched = (payload: unknown): boolean =>
  typeof payload === 'string' || Buffer.isBuffer(payload)
    ? payload.length >= WATCHED_BYTES
    : typeof (payload as { pipe?: unknown } | null)?.pipe === 'function';

export const writeStallPlugin = fp(
  async (app: FastifyInstance, opts: { stallMs: number; onStall: () => void }) => {
    app.addHook('onSend', (request, reply, payload, done) => {
      if (watched(payload))
        watchWriteStall(reply.raw, opts.stallMs, () => {
          request.log.warn('the client stopped reading the reply; ended it');
          opts.onStall();
          reply.raw.destroy();
        });
      done(null, payload);
    });
  },
  { name: 'write-stall' },
);
