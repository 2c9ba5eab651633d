// The batches of one proxy replica (docs/batches.md), built once by app.ts: the routes of both APIs
// and the line tickets in the API scope, and the runner (started unless BATCH_RUNNER=false; every
// replica may run it, one at a time holds its lock). Their money is billing's (ctx.billing.batches).
import type { FastifyInstance } from 'fastify';
import { DemandStore } from '../core/demand/demand.ts';
import { BatchFiles } from '../core/jobs/batch-files.ts';
import { Batches } from '../core/jobs/batches.ts';
import { ApiKeys } from '../core/keys/index.ts';
import { InteractiveLoad, interactiveLoadPlugin } from './batches/interactive.ts';
import { batchLinePlugin, LineTickets } from './batches/line-tickets.ts';
import { BatchRunner } from './batches/runner.ts';
import type { ProxyContext } from './context.ts';
import { batchFilesRoutes } from './routes/batch-files.ts';
import { batchesRoutes } from './routes/batches.ts';
import { messageBatchesRoutes } from './routes/message-batches.ts';

export function setupBatches(app: FastifyInstance, ctx: ProxyContext, proxyId: string) {
  const redis = ctx.media.redis;
  const tickets = new LineTickets();
  const interactive = new InteractiveLoad();
  const runner = new BatchRunner({
    app,
    ctx,
    redis,
    batches: new Batches(redis),
    files: new BatchFiles(redis, ctx.media.store),
    store: ctx.media.store,
    keys: new ApiKeys(redis, { brand: ctx.config.MODELPLANE_BRAND, kek: ctx.config.kek }),
    tickets,
    log: app.log,
    interactive,
    fleet: { store: new DemandStore(redis), proxyId },
  });
  return {
    runner,
    /** Registered in the `/v1` scope, after auth. */
    routes: async (api: FastifyInstance) => {
      await api.register(batchLinePlugin, { tickets });
      await api.register(interactiveLoadPlugin, {
        load: interactive,
        resolve: (model) => ctx.catalogue.get(model)?.id,
      });
      await api.register(batchFilesRoutes, { ctx });
      await api.register(batchesRoutes, { ctx });
      await api.register(messageBatchesRoutes, { ctx });
    },
    start: () => {
      if (ctx.config.BATCH_RUNNER) runner.start();
    },
  };
}
