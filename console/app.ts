// The console's server (issue "Console"): session sign-in and the console JSON API over core/,
// every route with a schema. Built from injected clients and config, like the proxy, so tests
// build the very same app. The React app that uses this API comes in a later step.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { Accounts } from '../core/accounts.ts';
import { Metering, ServiceLedger } from '../core/billing/index.ts';
import { CatalogueStore } from '../core/catalogue/index.ts';
import type { Config } from '../core/config.ts';
import { ApiKeys } from '../core/keys/index.ts';
import { createPayments } from '../core/payments/index.ts';
import { Users } from '../core/users.ts';
// The proxy's generic plugins: request ids, one error catalogue rendering, JSON bodies, zod schemas.
import { errorsPlugin } from '../proxy/plugins/errors.ts';
import { jsonBodyPlugin } from '../proxy/plugins/json-body.ts';
import { genRequestId, requestIdPlugin } from '../proxy/plugins/request-id.ts';
import { applyZodSchemas } from '../proxy/schemas/validation.ts';
import { sessionPlugin } from './plugins/session.ts';
import { accountRoutes } from './routes/account.ts';
import { billingRoutes } from './routes/billing.ts';
import { keysRoutes } from './routes/keys.ts';
import { ledgerApiRoutes } from './routes/ledger-api.ts';
import { sessionRoutes } from './routes/session.ts';
import { stripeWebhookRoutes } from './routes/stripe-webhook.ts';
import { Sessions } from './sessions.ts';
import { SignInThrottle } from './throttle.ts';

export interface ConsoleDeps {
  config: Config;
  redis: Redis;
  logger?: boolean;
  /** The built web app (default console/web/dist). */
  webDir?: string;
}

export async function buildConsoleApp(deps: ConsoleDeps): Promise<FastifyInstance> {
  const { config, redis } = deps;
  const app = Fastify({
    logger: deps.logger ?? {
      level: config.LOG_LEVEL,
      redact: [
        'req.headers.cookie',
        'req.headers["x-csrf-token"]',
        'req.headers.authorization',
        'req.headers["stripe-signature"]',
      ],
    },
    genReqId: genRequestId,
    requestIdHeader: false,
    // Sign-in throttling counts per client address: behind a load balancer, its X-Forwarded-For.
    trustProxy: true,
  });
  applyZodSchemas(app);
  const sessions = new Sessions(redis, config.CONSOLE_SESSION_TTL_MS);
  const payments = createPayments(config, redis);
  await app.register(requestIdPlugin);
  await app.register(errorsPlugin);
  await app.register(jsonBodyPlugin, { maxDepth: config.PROXY_JSON_MAX_DEPTH });
  await app.register(sessionPlugin, { sessions });
  await app.register(
    async (api) => {
      await api.register(sessionRoutes, {
        config,
        users: new Users(redis),
        accounts: new Accounts(redis),
        sessions,
        throttle: new SignInThrottle(
          redis,
          config.CONSOLE_SIGNIN_FAILURES_PER_EMAIL,
          config.CONSOLE_SIGNIN_FAILURES_PER_ADDRESS,
        ),
      });
      const keys = new ApiKeys(redis, { brand: config.MODELPLANE_BRAND, kek: config.kek });
      await api.register(keysRoutes, { keys });
      await api.register(accountRoutes, {
        redis,
        accounts: new Accounts(redis),
        keys,
        metering: new Metering(redis),
        catalogue: new CatalogueStore(redis),
      });
      await api.register(billingRoutes, { redis, accounts: new Accounts(redis), payments, config });
    },
    { prefix: '/api' },
  );
  if (payments.stripe) await app.register(stripeWebhookRoutes, { stripe: payments.stripe });
  await app.register(ledgerApiRoutes, {
    prefix: '/ledger/v1',
    token: config.CONSOLE_SERVICE_TOKEN,
    accounts: new Accounts(redis),
    metering: payments.metering,
    ledger: new ServiceLedger(redis, payments.metering),
  });
  app.get('/healthz', async () => ({ status: 'ok' }));
  await serveWebApp(app, deps.webDir ?? fileURLToPath(new URL('./web/dist/', import.meta.url)));
  return app;
}

/**
 * The web app (console/web, built by `vite build`): its assets, and index.html for the pages the
 * app routes itself (`/`, `/api` — API Management —, `/signin`). Without a build, the pages say
 * how to make one; the JSON API works either way.
 */
async function serveWebApp(app: FastifyInstance, dir: string): Promise<void> {
  if (!existsSync(`${dir}/index.html`)) {
    for (const page of ['/', '/api', '/signin'])
      app.get(page, { schema: { hide: true } as object }, async (_request, reply) =>
        reply.code(503).type('text/plain').send('The console web app is not built: run `make console-web`.'),
      );
    return;
  }
  await app.register(fastifyStatic, { root: dir, wildcard: false, index: false });
  for (const page of ['/', '/api', '/signin'])
    app.get(page, (_request, reply) => reply.sendFile('index.html'));
}
