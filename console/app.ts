// The console's server (issue "Console"): session sign-in and the console JSON API over core/,
// every route with a schema. Built from injected clients and config, like the proxy, so tests
// build the very same app. The React app that uses this API comes in a later step.
import Fastify, { type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { Accounts } from '../core/accounts.ts';
import { Metering } from '../core/billing/index.ts';
import { CatalogueStore } from '../core/catalogue/index.ts';
import type { Config } from '../core/config.ts';
import { ApiKeys } from '../core/keys/index.ts';
import { Users } from '../core/users.ts';
// The proxy's generic plugins: request ids, one error catalogue rendering, JSON bodies, zod schemas.
import { errorsPlugin } from '../proxy/plugins/errors.ts';
import { jsonBodyPlugin } from '../proxy/plugins/json-body.ts';
import { genRequestId, requestIdPlugin } from '../proxy/plugins/request-id.ts';
import { useZodSchemas } from '../proxy/schemas/validation.ts';
import { sessionPlugin } from './plugins/session.ts';
import { accountRoutes } from './routes/account.ts';
import { keysRoutes } from './routes/keys.ts';
import { sessionRoutes } from './routes/session.ts';
import { Sessions } from './sessions.ts';
import { SignInThrottle } from './throttle.ts';

export interface ConsoleDeps {
  config: Config;
  redis: Redis;
  logger?: boolean;
}

export async function buildConsoleApp(deps: ConsoleDeps): Promise<FastifyInstance> {
  const { config, redis } = deps;
  const app = Fastify({
    logger: deps.logger ?? {
      level: config.LOG_LEVEL,
      redact: ['req.headers.cookie', 'req.headers["x-csrf-token"]'],
    },
    genReqId: genRequestId,
    requestIdHeader: false,
    // Sign-in throttling counts per client address: behind a load balancer, its X-Forwarded-For.
    trustProxy: true,
  });
  useZodSchemas(app);
  const sessions = new Sessions(redis, config.CONSOLE_SESSION_TTL_MS);
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
    },
    { prefix: '/api' },
  );
  app.get('/healthz', async () => ({ status: 'ok' }));
  return app;
}
