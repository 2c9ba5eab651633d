// The proxy process: `tsx proxy/main.ts`. Configuration comes from the environment (core/config/proxy.ts,
// docs/operations.md "Configuration"); REDIS_URL and MODELPLANE_KEK are the ones that matter. Run as many
// replicas as you like against one Redis; each keeps one thing of its own, its settlement journal
// in PROXY_DATA_DIR (a volume that outlives the process, so a restart replays what Redis missed).
import { CatalogueSnapshot } from '../core/catalogue/index.ts';
import { loadProxyConfig } from '../core/config/index.ts';
import { Journal, type JournalKeeper, startJournalKeeper } from '../core/journal/index.ts';
import { connectRedis } from '../core/redis/client.ts';
import { requireNoEviction } from '../core/redis/policy.ts';
import { buildProxyApp } from './app.ts';
import { registerJournalMetrics } from './metrics/journal-metrics.ts';
import { startupStep } from './startup.ts';

async function main() {
  const config = loadProxyConfig();
  // Auto-pipelining: the reserves and settles of concurrent requests leave in one write.
  // A command timeout bounds every request-path wait on a hung Redis (a retryable 500 after it).
  const redis = connectRedis(config.REDIS_URL, {
    maxRetriesPerRequest: 2,
    enableAutoPipelining: true,
    commandTimeout: config.REDIS_COMMAND_TIMEOUT_MS,
  });
  // The first Redis steps are retried while Redis is slow or out of reach (./startup.ts); the
  // app's own start-up (scripts, the journal's replay) is not repeatable, so it is only named.
  const timeouts = {
    commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS,
    retryMs: config.PROXY_STARTUP_REDIS_RETRY_MS,
  };
  const retrying = (message: string, inMs: number) => console.error(`${message}; retrying in ${inMs} ms`);
  await startupStep(
    'checking Redis (INFO memory)',
    () => requireNoEviction(redis, 'the proxy'),
    timeouts,
    retrying,
  );
  const subscriber = connectRedis(config.REDIS_URL);
  const catalogue = new CatalogueSnapshot(redis, {
    subscriber,
    onError: (err) => console.error('catalogue refresh failed', err),
  });
  await startupStep(
    'reading the catalogue',
    async () => {
      try {
        await catalogue.start();
      } catch (err) {
        catalogue.stop();
        throw err;
      }
    },
    timeouts,
    retrying,
  );
  const proxy = await startupStep(
    'starting billing and the routes',
    () => buildProxyApp({ config, redis, subscriber, catalogue }),
    { ...timeouts, retryMs: 0 },
    retrying,
  );
  await proxy.app.listen({ host: config.PROXY_HOST, port: config.PROXY_PORT });
  // /metrics is not on the API port (docs/security.md "Metrics port").
  await proxy.metricsServer.listen(config.PROXY_METRICS_HOST, config.PROXY_METRICS_PORT);
  // The durable journal (DATABASE_URL): one replica archives the usage streams and reconciles
  // top-ups, off the request path — no call waits on PostgreSQL.
  let journal: Journal | undefined;
  let keeper: JournalKeeper | undefined;
  if (config.DATABASE_URL !== undefined) {
    journal = await Journal.open(config.DATABASE_URL, { timeoutMs: config.JOURNAL_DB_TIMEOUT_MS });
    keeper = startJournalKeeper(redis, journal, {
      archiveIntervalMs: config.JOURNAL_ARCHIVE_INTERVAL_MS,
      reconcileIntervalMs: config.JOURNAL_RECONCILE_INTERVAL_MS,
      reconcileWindowMs: config.JOURNAL_RECONCILE_WINDOW_MS,
      lockTtlMs: config.JOURNAL_LOCK_MS,
      // Half the longest wait: a pass on a hung database fails at about the whole timeout, so a
      // threshold equal to it raced the pass's own end and the stall could go unsaid.
      stallMs: Math.floor(config.JOURNAL_DB_TIMEOUT_MS / 2),
      onRestored: (restored) =>
        proxy.app.log.warn({ restored }, 'top-ups Redis had lost were credited again'),
      onPartitions: (partitions) =>
        proxy.app.log.info({ partitions }, 'journal partitions made for the months ahead'),
      onError: (err, what) => proxy.app.log.error({ err }, `journal ${what} failed`),
      onStall: ({ forMs, behindSinceMs }) =>
        proxy.app.log.error(
          {
            forMs,
            archiveLagSeconds: behindSinceMs === null ? 0 : Math.round((Date.now() - behindSinceMs) / 1000),
          },
          'the journal keeper is stalled: its database (or Redis) has not answered for this long; usage stays in the Redis streams until it does',
        ),
      onStallEnd: ({ forMs }) => proxy.app.log.warn({ forMs }, 'the journal keeper runs again after a stall'),
    });
    registerJournalMetrics(proxy.ctx.metrics.registry, keeper.status);
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    proxy.app.log.info({ signal }, 'shutting down');
    // Calls finish (or end after the grace period) and their settlements land before Redis goes.
    await proxy.shutdown();
    // Neither waits long on a hung database (core/journal/keeper.ts, pool.ts): the pod's grace
    // period is for the calls above, and nothing here loses money (the streams keep the usage).
    await keeper?.stop();
    await journal?.close(1_000);
    catalogue.stop();
    await Promise.allSettled([redis.quit(), subscriber.quit()]);
    proxy.app.log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
