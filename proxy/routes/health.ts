// /healthz: the process answers. /readyz: this replica can serve — Redis answers, the catalogue
// snapshot has loaded, its settlements reach Redis (billing) and it is not shutting down — so a
// load balancer keeps traffic away until all hold.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Redis } from '../../core/redis/client.ts';
import type { ProxyContext } from '../context.ts';
import { redisAnswers } from '../metrics/redis-reachable.ts';

const status = z.object({
  status: z.enum(['ok', 'unavailable']),
  checks: z.record(z.string(), z.boolean()).optional(),
  /** What is wrong, in words: why not ready, or what is degraded while ready. */
  reasons: z.array(z.string()).optional(),
});

export async function healthRoutes(app: FastifyInstance, opts: { ctx: ProxyContext; redis: Redis }) {
  app.get(
    '/healthz',
    { schema: { summary: 'Liveness', tags: ['operations'], response: { 200: status } } },
    async () => ({
      status: 'ok' as const,
    }),
  );
  app.get(
    '/readyz',
    {
      schema: {
        summary: 'Readiness: Redis reachable, catalogue loaded, settlements landing, not shutting down',
        tags: ['operations'],
        response: { 200: status, 503: status },
      },
    },
    async (_request, reply) => {
      const redis = await redisAnswers(opts.redis);
      const { ctx } = opts;
      const checks = {
        redis,
        catalogue: ctx.catalogue.loaded,
        // The fault table's checks (proxy/faults/faults.ts): redisData, billing, journal.
        ...ctx.billing.faults.readiness(),
        serving: ctx.serving.ready,
      };
      const ok = Object.values(checks).every((v) => v);
      // Ready, and yet a degraded state to name (a shard's fault: a Redis primary without replicas,
      // one shard's settlements stalled) — its words ride along (issue 38).
      const reasons = ctx.billing.faults.reasons();
      if (ok)
        return reply.code(200).send({ status: 'ok', checks, ...(reasons.length > 0 ? { reasons } : {}) });
      return reply.code(503).send({ status: 'unavailable', checks, reasons: ctx.billing.faults.reasons() });
    },
  );
}
