// The console's server (issue "Console"): session sign-in and the console JSON API over core/,
// every route with a schema. Built from injected clients and config, like the proxy, so tests
// build the very same app. The React app that uses this API comes in a later step.
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import { Accounts } from '../core/accounts/accounts.ts';
import { Team } from '../core/accounts/team.ts';
import { Users } from '../core/accounts/users.ts';
import { Metering, ServiceLedger } from '../core/billing/index.ts';
import { CatalogueStore } from '../core/catalogue/index.ts';
import type { ConsoleConfig as Config } from '../core/config/index.ts';
import { newRequestId } from '../core/ids.ts';
import { BatchFiles } from '../core/jobs/batch-files.ts';
import { Batches } from '../core/jobs/batches.ts';
import type { Journal } from '../core/journal/index.ts';
import { ApiKeys } from '../core/keys/index.ts';
import { AutoTopUpStore, createPayments, startAutoTopUpChecker } from '../core/payments/index.ts';
import type { Redis } from '../core/redis/client.ts';
import { createObjectStore, type ObjectStore } from '../core/storage/index.ts';
import { UrlSigner } from '../core/storage/url-signer.ts';
// What every server here shares with the proxy: request ids, one error catalogue rendering, JSON
// bodies, zod schemas.
import {
  applyZodSchemas,
  clientError,
  errorsPlugin,
  jsonBodyPlugin,
  requestIdPlugin,
} from '../http/index.ts';
import { sessionPlugin } from './plugins/session.ts';
import { consoleRequestForLog } from './request-log.ts';
import { accountRoutes } from './routes/account.ts';
import { accountLimitsRoutes } from './routes/account-limits.ts';
import { autoTopUpRoutes } from './routes/auto-topup.ts';
import { balanceAlertRoutes } from './routes/balance-alert.ts';
import { batchesRoutes } from './routes/batches.ts';
import { billingRoutes } from './routes/billing.ts';
import { invitationRoutes } from './routes/invitations.ts';
import { keyLimitsRoutes } from './routes/key-limits.ts';
import { keysRoutes } from './routes/keys.ts';
import { ledgerApiRoutes } from './routes/ledger-api.ts';
import { appNotFoundPage, pageRoutes } from './routes/pages.ts';
import { profileRoutes } from './routes/profile.ts';
import { meView, sessionRoutes } from './routes/session.ts';
import { stripeWebhookRoutes } from './routes/stripe-webhook.ts';
import { teamRoutes } from './routes/team.ts';
import { usageCallsRoutes } from './routes/usage-calls.ts';
import { Sessions } from './sessions.ts';
import { SignInThrottle } from './throttle.ts';

export interface ConsoleRoute {
  method: string;
  url: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    routeTable: ConsoleRoute[];
  }
}

export interface ConsoleDeps {
  config: Config;
  redis: Redis;
  /** The durable journal (DATABASE_URL): top-ups committed there first, the billing ledger read from it. */
  journal?: Journal;
  logger?: boolean;
  /** Where log lines go (default stdout); the security suite reads a console's real log from it. */
  logStream?: NodeJS.WritableStream;
  /** The built web app (default console/web/dist). */
  webDir?: string;
  /** Where batches' files are (default: the configured media store, the proxy's: MEDIA_STORE and friends). */
  store?: ObjectStore;
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
      // Invitation tokens ride in paths: the request line is logged masked (./request-log.ts).
      serializers: { req: consoleRequestForLog },
      ...(deps.logStream ? { stream: deps.logStream } : {}),
    },
    genReqId: newRequestId,
    requestIdHeader: false,
    // Sign-in throttling counts per client address: X-Forwarded-For is believed only from the
    // configured load balancers (CONSOLE_TRUSTED_PROXIES; default none), or a client picks its own.
    trustProxy: config.CONSOLE_TRUSTED_PROXIES,
    // Every console request and answer is small (the biggest body is a Stripe webhook's): a client
    // that is slow or silent past CONSOLE_REQUEST_TIMEOUT_MS gets a 408 in the error shape, and an
    // idle keep-alive socket is closed after the usual 65 s (above common load balancers' 60 s).
    bodyLimit: 1024 * 1024,
    clientErrorHandler: clientError,
    connectionTimeout: 0,
    requestTimeout: config.CONSOLE_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: 65_000,
    http: {
      headersTimeout: Math.min(15_000, config.CONSOLE_REQUEST_TIMEOUT_MS),
      connectionsCheckingInterval: Math.min(1_000, Math.floor(config.CONSOLE_REQUEST_TIMEOUT_MS / 4)),
    },
  });
  applyZodSchemas(app);
  // Every route, as registered: tests walk it to prove each one needs a session and CSRF token.
  const routeTable: ConsoleRoute[] = [];
  app.decorate('routeTable', routeTable);
  app.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) if (method !== 'HEAD') routeTable.push({ method, url: r.url });
  });
  const sessions = new Sessions(redis, config.CONSOLE_SESSION_TTL_MS);
  const accounts = new Accounts(redis);
  const users = new Users(redis);
  const team = new Team(redis);
  const keys = new ApiKeys(redis, { brand: config.MODELPLANE_BRAND, kek: config.kek });
  const metering = new Metering(redis);
  const throttle = new SignInThrottle(
    redis,
    config.CONSOLE_SIGNIN_FAILURES_PER_EMAIL,
    config.CONSOLE_SIGNIN_FAILURES_PER_ADDRESS,
  );
  const payments = createPayments(config, redis, accounts, deps.journal);
  const store = deps.store ?? (await createObjectStore(config, new UrlSigner(config.kek)));
  await app.register(requestIdPlugin);
  const webDir = deps.webDir ?? fileURLToPath(new URL('./web/dist/', import.meta.url));
  await app.register(errorsPlugin, {
    notFoundPage: appNotFoundPage(webDir, new URL(config.CONSOLE_API_BASE_URL).origin),
  });
  await app.register(jsonBodyPlugin, { maxDepth: config.PROXY_JSON_MAX_DEPTH });
  await app.register(sessionPlugin, { sessions, team });
  // The console's JSON API: every route needs a session (and the CSRF token to change anything),
  // and acts inside the session's account only.
  await app.register(
    async (api) => {
      const usageHistory = deps.journal !== undefined;
      await api.register(sessionRoutes, { config, users, accounts, team, sessions, throttle, usageHistory });
      const me = meView({ config, users, accounts, team, usageHistory });
      await api.register(invitationRoutes, { config, accounts, users, team, sessions, throttle, me });
      await api.register(keysRoutes, { keys, redis });
      await api.register(keyLimitsRoutes, { keys, accounts });
      await api.register(accountLimitsRoutes, { keys, accounts });
      await api.register(accountRoutes, {
        redis,
        accounts,
        keys,
        metering,
        catalogue: new CatalogueStore(redis),
      });
      await api.register(usageCallsRoutes, { redis, journal: deps.journal, keys, accounts });
      await api.register(profileRoutes, { accounts, users });
      await api.register(batchesRoutes, {
        batches: new Batches(redis),
        files: new BatchFiles(redis, store),
        keys,
      });
      await api.register(teamRoutes, { config, team, users });
      await api.register(balanceAlertRoutes, { redis, accounts, metering });
      await api.register(billingRoutes, {
        redis,
        accounts,
        payments,
        config,
        ...(deps.journal ? { journal: deps.journal } : {}),
      });
      await api.register(autoTopUpRoutes, {
        accounts,
        store: new AutoTopUpStore(redis),
        auto: payments.auto,
        config,
      });
    },
    { prefix: '/api' },
  );
  if (payments.stripe) await app.register(stripeWebhookRoutes, { stripe: payments.stripe });
  await app.register(ledgerApiRoutes, {
    prefix: '/ledger/v1',
    token: config.CONSOLE_SERVICE_TOKEN,
    accounts,
    metering: payments.metering,
    ledger: new ServiceLedger(redis, payments.metering),
  });
  app.get('/healthz', async () => ({ status: 'ok' }));
  // Auto top-up's checker: in every instance (a crossing is claimed once in Redis), off the proxy.
  const auto = payments.auto;
  if (auto !== null && config.CONSOLE_AUTO_TOPUP_CHECK_MS > 0) {
    let checker: { stop(): Promise<void> } | undefined;
    app.addHook('onReady', async () => {
      checker = startAutoTopUpChecker(auto, config.CONSOLE_AUTO_TOPUP_CHECK_MS, app.log);
    });
    app.addHook('onClose', async () => checker?.stop());
  }
  await app.register(pageRoutes, {
    webDir,
    openApiUrl: `${new URL(config.CONSOLE_API_BASE_URL).origin}/openapi.json`,
    apiOrigin: new URL(config.CONSOLE_API_BASE_URL).origin,
  });
  return app;
}
