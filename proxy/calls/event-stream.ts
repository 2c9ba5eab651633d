// A streamed answer's response head: fastify lets go of the response, and a 200 event stream starts
// with the headers set so far (the request id, CORS).
import type { FastifyReply } from 'fastify';

/** Takes the response over from fastify and writes a 200 event-stream head (its headers kept). */
export function openEventStream(reply: FastifyReply): FastifyReply['raw'] {
  const res = reply.raw;
  reply.hijack();
  res.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string | string[]>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  return res;
}
