// Closing a connection whose request body was not read to its end (an upload refused part-way, an
// answer sent before the body): if the server closed the socket with the client's bytes still
// arriving, the kernel would answer them with a reset, and a client still sending (the `openai`
// SDK, a browser) often lost the answer it had not read yet — `EPIPE` / `ECONNRESET` instead of the
// 400. RFC 9112 §9.6 (tear-down): close the write side first, then go on reading, and discarding,
// until the client closes or a bound is reached; only then close the socket. The bounds keep an
// endless body from being read to its end: a client that reads the answer stops sending at once.
import type { IncomingMessage } from 'node:http';

export interface LingerBounds {
  /** Bytes read and discarded after the answer, at most. */
  bytes: number;
  /** A quiet spell this long ends the drain. */
  idleMs: number;
  /** The drain ends after this long whatever the client does. */
  totalMs: number;
}

export const LINGER: LingerBounds = { bytes: 16 * 1024 * 1024, idleMs: 1_000, totalMs: 5_000 };

/**
 * Arms the lingering close on the request's connection: Node calls `destroySoon` on the socket
 * once an answer with `Connection: close` is handed to it (end the write side, destroy when
 * flushed); this one ends the write side and drains before destroying. Call before the answer is
 * sent; the answer must carry `Connection: close`.
 */
export function lingerAfterAnswer(req: IncomingMessage, bounds: LingerBounds = LINGER): void {
  const socket = req.socket;
  if (!socket || socket.destroyed) return;
  const own = socket.destroySoon;
  socket.destroySoon = function destroySoon() {
    socket.destroySoon = own;
    if (socket.destroyed) return;
    socket.end(); // FIN after the answer: the client reads all of it, then the end
    const start = socket.bytesRead;
    let over = false;
    const stop = () => {
      if (over) return;
      over = true;
      clearTimeout(idle);
      clearTimeout(total);
      // Destroying before the answer is flushed would drop its unwritten bytes.
      if (socket.writableFinished) socket.destroy();
      else socket.once('finish', () => socket.destroy());
    };
    const idle = setTimeout(stop, bounds.idleMs);
    const total = setTimeout(stop, bounds.totalMs);
    idle.unref();
    total.unref();
    req.on('data', () => {
      if (socket.bytesRead - start > bounds.bytes) stop();
      else idle.refresh();
    });
    req.once('end', stop);
    req.once('error', stop);
    socket.once('end', stop);
    socket.once('close', stop);
    req.resume();
  };
}
