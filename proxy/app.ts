// Builds the proxy's fastify app from injected clients and config, so tests build the very same
// app against their own Redis and simulator. Layout (fastify/demo style): cross-cutting plugins at
// the root (request id first: every response carries it), then the `/v1` API scope where auth is
// attached once, then the public operational routes.

import Fastify, { type FastifyInstance } from 'fastify';
import { Accounts } from '../core/accounts/accounts.ts';
import type { CatalogueSnapshot } from '../core/catalogue/index.ts';
import type { ProxyConfig as Config } from '../core/config/index.ts';
import { newRequestId } from '../core/ids.ts';
import { ApiKeys } from '../core/keys/index.ts';
import { acknowledge, parseAnnouncement } from '../core/redis/announce.ts';
import { onMessage, type Redis, subscribe } from '../core/redis/client.ts';
import { channels } from '../core/redis/keyspace.ts';
import { createObjectStore, type ObjectStore } from '../core/storage/index.ts';
import { UrlSigner } from '../core/storage/url-signer.ts';
import { clientError, errorsPlugin, frameworkError } from '../http/errors.ts';
import { jsonBodyPlugin } from '../http/json-body.ts';
import { requestIdPlugin } from '../http/request-id.ts';
import { applyZodSchemas } from '../http/validation.ts';
import { KeyCache } from './auth/key-cache.ts';
import { principalLookup } from './auth/principal.ts';
import { RetiredKeys } from './auth/retired.ts';
import { setupBatches } from './batch-setup.ts';
import { Billing } from './billing/billing.ts';
import type { ProxyContext } from './context.ts';
import { startDemand } from './demand/index.ts';
import { EngineClient } from './engine/client.ts';
import { EngineHealth } from './engine/health.ts';
import { prefixRouting } from './engine/kv-index/start.ts';
import { EndpointPicker } from './engine/picker.ts';
import { startMediaSweeper } from './media/media-sweeper.ts';
import { VideoWorker } from './media/video-worker.ts';
import { createProxyMetrics, metricsPlugin } from './metrics/metrics.ts';
import { type MetricsServer, metricsServer } from './metrics/metrics-server.ts';
import { registerRedisReachable } from './metrics/redis-reachable.ts';
import { authPlugin } from './plugins/auth.ts';
import { callFactsPlugin } from './plugins/call-facts.ts';
import { corsPlugin } from './plugins/cors.ts';
import { writeStallPlugin } from './plugins/write-stall.ts';
import { lazyChildLogger, requestForLog } from './request-logger.ts';
import { chatRoutes } from './routes/chat.ts';
import { embeddingsRoutes } from './routes/embeddings.ts';
import { filesRoutes } from './routes/files.ts';
import { healthRoutes } from './routes/health.ts';
import { imageEditsRoutes } from './routes/image-edits.ts';
import { imagesRoutes } from './routes/images.ts';
import { messagesRoutes } from './routes/messages.ts';
import { modelsRoutes } from './routes/models.ts';
import { collectRoutes, openApiRoutes } from './routes/openapi.ts';
import { responsesRoutes } from './routes/responses.ts';
import { videosRoutes } from './routes/videos.ts';
import { shutdown } from './shutdown.ts';
import { tracingPlugin } from './tracing/plugin.ts';
import { Tracing } from './tracing/tracing.ts';

export interface ProxyDeps {
  config: Config;
  /** Commands (keys, accounts, metering). */
  redis: Redis;
  /**
   * A separate connection in subscriber mode: key invalidations, lease reclaim requests (and the
   * catalogue's changes).
   */
  subscriber: Redis;
  /** A started snapshot (main.ts and tests call start()). */
  catalogue: CatalogueSnapshot;
  /** Where generated media is kept; defaults to the filesystem store under MEDIA_DIR. */
  store?: ObjectStore;
  /** false: this replica does not advance video jobs (tests that need a quiet fleet). */
  videoWorker?: boolean;
  /** pino logger options or false; defaults from LOG_LEVEL. */
  logger?: boolean | { level: string };
  /** Where log lines go (default stdout); tests read a whole run's logs from it. */
  logStream?: NodeJS.WritableStream;
}

export interface ProxyApp {
  app: FastifyInstance;
  ctx: ProxyContext;
  videoWorker: VideoWorker;
  /** /metrics on its own port (issue 24 item 6): main.ts and tests call listen(); closed with the app. */
  metricsServer: MetricsServer;
  /** Tracing, when an OTLP endpoint is configured (proxy/tracing/); null when off. */
  tracing: Tracing | null;
  /**
   * The ordered shutdown (./shutdown.ts): readiness off, stop accepting, let running calls finish
   * (PROXY_SHUTDOWN_GRACE_MS) and end the rest, land the outbox, give leases back. The Redis
   * clients stay the caller's to close.
   */
  shutdown(): Promise<void>;
}

export async function buildProxyApp(deps: ProxyDeps): Promise<ProxyApp> {
  const { config } = deps;
  // Signed media links need an origin clients reach; in production it is configured, never taken
  // from the request's Host header (issue 24 item 8).
  if (config.NODE_ENV === 'production' && config.PROXY_PUBLIC_URL === undefined)
    throw new Error(
      'invalid configuration:\n  PROXY_PUBLIC_URL: required when NODE_ENV=production (the origin of signed media links, e.g. https://api.example.com)',
    );
  const app = Fastify({
    logger:
      deps.logger === false
        ? false
        : {
            level: deps.logger === true || deps.logger === undefined ? config.LOG_LEVEL : deps.logger.level,
            // The key is a header; request bodies are never logged (prompts are private), and query
            // strings lose their values (a key pasted into a URL must not land in the logs).
            redact: ['req.headers.authorization', 'req.headers["x-api-key"]'],
            serializers: { req: requestForLog },
            ...(deps.logStream ? { stream: deps.logStream } : {}),
          },
    genReqId: newRequestId,
    requestIdHeader: false,
    childLoggerFactory: lazyChildLogger,
    bodyLimit: config.PROXY_BODY_LIMIT_BYTES,
    frameworkErrors: frameworkError,
    clientErrorHandler: clientError,
    // Requests must arrive in time (headers, then the whole body); responses are not timed here:
    // an engine may think for minutes (PROXY_ENGINE_*_TIMEOUT_MS bound it), and a stream or a
    // large reply whose client stops reading is ended after PROXY_STREAM_STALL_MS
    // (calls/relay.ts, plugins/write-stall.ts).
    connectionTimeout: 0,
    requestTimeout: config.PROXY_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.PROXY_KEEP_ALIVE_TIMEOUT_MS,
    http: {
      headersTimeout: config.PROXY_HEADERS_TIMEOUT_MS,
      // How often Node looks for connections past those bounds (its default is 30 s).
      connectionsCheckingInterval: Math.min(1_000, Math.floor(config.PROXY_HEADERS_TIMEOUT_MS / 4)),
    },
  });
  applyZodSchemas(app);

  const keyCache = new KeyCache({
    lookup: principalLookup(
      new ApiKeys(deps.redis, { brand: config.MODELPLANE_BRAND, kek: config.kek }),
      new Accounts(deps.redis),
    ),
    ttlMs: config.PROXY_KEY_CACHE_MS,
  });
  await subscribeInvalidations(deps.redis, deps.subscriber, keyCache, (err) =>
    app.log.error({ err }, 'key invalidation'),
  );

  const metrics = createProxyMetrics();
  const metricsHttp = metricsServer(metrics.registry);
  // The Redis-unreachable alert's gauge: a PING with a timeout at scrape time.
  registerRedisReachable(metrics.registry, deps.redis);
  const health = new EngineHealth({ cooldownMs: config.PROXY_ENGINE_COOLDOWN_MS });
  const client = new EngineClient({
    connections: config.PROXY_ENGINE_CONNECTIONS,
    headersTimeoutMs: config.PROXY_ENGINE_HEADERS_TIMEOUT_MS,
    bodyTimeoutMs: config.PROXY_ENGINE_BODY_TIMEOUT_MS,
  });
  const billing = await Billing.start({
    config,
    redis: deps.redis,
    subscriber: deps.subscriber,
    metrics,
    log: app.log,
  });
  const demand = startDemand({
    redis: deps.redis,
    catalogue: deps.catalogue,
    registry: metrics.registry,
    intervalMs: config.PROXY_DEMAND_PUBLISH_MS,
    onError: (err) => app.log.warn({ err }, 'demand publish'),
  });
  const signer = new UrlSigner(config.kek);
  const mediaStore = deps.store ?? (await createObjectStore(config, signer));
  const picker = new EndpointPicker(health, { loadFactor: config.PROXY_AFFINITY_LOAD_FACTOR });
  const routing = prefixRouting(config, deps.catalogue, app.log, (url) => picker.inFlight(url));
  const ctx: ProxyContext = {
    config,
    catalogue: deps.catalogue,
    keyCache,
    billing,
    metrics,
    engine: {
      client,
      health,
      picker,
      ...(routing ? { routing } : {}),
      metrics,
      attempts: config.PROXY_ENGINE_ATTEMPTS,
      demand: demand.board,
      hold: demand.hold,
      queue: demand.queue,
    },
    media: { store: mediaStore, signer, redis: deps.redis },
    serving: { ready: true },
  };
  const stopMediaSweeper = startMediaSweeper(deps.redis, mediaStore, {
    intervalMs: config.MEDIA_SWEEP_INTERVAL_MS,
    lockTtlMs: Math.max(config.MEDIA_SWEEP_INTERVAL_MS * 3, 5_000),
    onError: (err) => app.log.error({ err }, 'media sweeper'),
  });
  const videoWorker = new VideoWorker({
    config,
    billing,
    redis: deps.redis,
    catalogue: deps.catalogue,
    engine: ctx.engine,
    store: mediaStore,
    metrics,
    log: app.log,
  });
  metrics.sources.videoQueue = () => videoWorker.jobs.queue();
  if (deps.videoWorker !== false) videoWorker.start();
  const batches = setupBatches(app, ctx, demand.publisher.proxyId);
  app.addHook('onClose', async () => {
    await demand.publisher.stop();
    demand.queue.close();
    routing?.close();
    await batches.runner.stop();
    await videoWorker.stop();
    await stopMediaSweeper();
    (mediaStore as { close?(): void }).close?.();
    // Every response is out by now: their settlements land, leases go back (DESIGN "Money").
    await billing.close(config.PROXY_SHUTDOWN_DRAIN_MS);
    await client.close();
    await metricsHttp.close();
  });

  const routes = collectRoutes(app);
  await app.register(requestIdPlugin);
  // Off unless an OTLP endpoint is configured: then no hook at all, and request.trace stays unset.
  const tracing = Tracing.fromConfig(config);
  if (tracing !== null) await app.register(tracingPlugin, { tracing });
  await app.register(errorsPlugin);
  await app.register(jsonBodyPlugin, { maxDepth: config.PROXY_JSON_MAX_DEPTH });
  await app.register(corsPlugin, { origins: config.PROXY_CORS_ORIGINS });
  await app.register(metricsPlugin, { metrics });
  await app.register(writeStallPlugin, {
    stallMs: config.PROXY_STREAM_STALL_MS,
    onStall: () => metrics.responsesStalled.inc(),
  });
  await app.register(
    async (api) => {
      // A fault no call can be served through (proxy/faults/: a Redis that lost its data) says so first.
      api.addHook('onRequest', async () => {
        const refused = billing.faults.callRefusal();
        if (refused !== null) throw refused;
      });
      await api.register(authPlugin, { keyCache, retired: new RetiredKeys(deps.redis) });
      await api.register(callFactsPlugin, { redis: deps.redis }); // issue 37: status, latency, refusals
      await api.register(modelsRoutes, { ctx });
      await api.register(chatRoutes, { ctx });
      await api.register(embeddingsRoutes, { ctx });
      await api.register(messagesRoutes, { ctx });
      await api.register(responsesRoutes, { ctx, redis: deps.redis }); // issue 25: the Responses API
      await api.register(imagesRoutes, { ctx });
      await api.register(imageEditsRoutes, { ctx });
      await api.register(videosRoutes, { ctx });
      await batches.routes(api); // issue 35: files and batches of both APIs
    },
    { prefix: '/v1' },
  );
  await app.register(filesRoutes, { store: mediaStore, signer });
  await app.register(healthRoutes, { ctx, redis: deps.redis });
  await app.register(openApiRoutes, { routes });
  batches.start();
  return {
    app,
    ctx,
    videoWorker,
    metricsServer: metricsHttp,
    tracing,
    shutdown: () => shutdown(app, ctx),
  };
}

/**
 * Rotate and delete announce the dead secret's hash: applying it aborts this replica's requests made
 * with it. A spend-limit change announces the key's hash on keyChanged: the cached lookup is dropped
 * and its requests go on. A currency or grant change names the account: its cached principals are
 * dropped so the next request sees the change. Each is acknowledged once applied: the change returns
 * only then (core/redis/announce.ts). After a reconnect messages may have been missed: the cache is dropped.
 */
async function subscribeInvalidations(
  redis: Redis,
  subscriber: Redis,
  keyCache: KeyCache,
  onError: (err: unknown) => void,
): Promise<void> {
  const appliers: Record<string, (payload: string) => void> = {
    [channels.keyInvalidated]: (hash) => keyCache.invalidate(hash),
    [channels.keyChanged]: (hash) => keyCache.refresh(hash),
    [channels.accountChanged]: (accountId) => keyCache.forgetAccount(accountId),
  };
  onMessage(subscriber, (channel, message) => {
    const apply = appliers[channel];
    if (apply === undefined) return;
    const { nonce, payload } = parseAnnouncement(message);
    apply(payload);
    acknowledge(redis, nonce).catch(onError);
  });
  let connectedOnce = false;
  subscriber.on('ready', () => {
    if (connectedOnce) keyCache.clear();
    connectedOnce = true;
  });
  if (subscriber.status === 'ready') connectedOnce = true;
  // While a cluster node is down its connection is retried every few milliseconds, each retry an
  // 'error' (hundreds a second during a failover): the first is logged, then one a second.
  let lastLoggedAt = 0;
  subscriber.on('error', (err: unknown) => {
    const now = Date.now();
    if (now - lastLoggedAt < 1_000) return;
    lastLoggedAt = now;
    onError(err);
  });
  await subscribe(subscriber, channels.keyInvalidated, channels.keyChanged, channels.accountChanged);
}
