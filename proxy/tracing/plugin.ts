// The request's trace (./tracing.ts), registered only when tracing is on: each API request (/v1)
// the sampler keeps gets a RequestTrace at onRequest, before auth, and its span ends when the
// response closes. Its log lines carry its trace id (trace_id), so a trace and its logs meet.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { whenClosed } from '../reply-closed.ts';
import type { RequestTrace, Tracing } from './tracing.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set only when tracing is on (proxy/tracing/): undefined costs the hot path one test. */
    trace?: RequestTrace;
  }
}

export const tracingPlugin = fp(async (app: FastifyInstance, opts: { tracing: Tracing }) => {
  app.decorateRequest('trace', undefined);
  app.addHook('onRequest', (request, reply, done) => {
    const route = request.routeOptions.url;
    if (route === undefined || !route.startsWith('/v1/')) return done();
    const t = opts.tracing.begin(request.method, route, request.id);
    if (t === undefined) return done(); // not sampled
    request.trace = t;
    // The reply logs the "request completed" line: it gets the same child.
    request.log = request.log.child({ trace_id: t.traceId });
    reply.log = request.log;
    whenClosed(reply, () => t.end(reply.statusCode));
    done();
  });
  app.addHook('onClose', () => opts.tracing.shutdown());
});
