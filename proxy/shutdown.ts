// The proxy's shutdown, in the order that loses no money (DESIGN "Money"): readiness off (load
// balancers stop sending), stop accepting (idle keep-alive connections close at once), let the
// running calls finish within PROXY_SHUTDOWN_GRACE_MS, then end the ones still running (a stream
// ends with an in-band error and is charged for what it delivered), then fastify's onClose lands
// the outbox and gives the leases back (app.ts). The Redis clients close after, in main.ts.
import type { FastifyInstance } from 'fastify';
import { shuttingDown } from '../core/errors.ts';
import type { ProxyContext } from './context.ts';

/** How long ended calls get to settle after they were told to stop. */
const ENDED_CALLS_MS = 2_000;

export async function shutdown(app: FastifyInstance, ctx: ProxyContext): Promise<void> {
  ctx.serving.ready = false;
  const closed = app.close();
  const { billing, config } = ctx;
  if (!(await billing.whenIdle(config.PROXY_SHUTDOWN_GRACE_MS))) {
    app.log.warn({ calls: billing.openCalls }, 'ending the calls still running after the grace period');
    billing.abortOpen(shuttingDown());
    await billing.whenIdle(ENDED_CALLS_MS);
  }
  // Whatever connection is still open (a client that stopped reading) would hold close() forever.
  app.server.closeAllConnections();
  await closed;
}
