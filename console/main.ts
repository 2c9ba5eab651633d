// The console process: `tsx console/main.ts`. Configuration from the environment (core/config/console.ts,
// docs/operations.md "Configuration"): REDIS_URL, MODELPLANE_KEK, CONSOLE_*, DATABASE_URL.
import { loadConsoleConfig } from '../core/config/index.ts';
import { Journal } from '../core/journal/index.ts';
import { connectRedis } from '../core/redis/client.ts';
import { requireNoEviction } from '../core/redis/policy.ts';
import { buildConsoleApp } from './app.ts';

const config = loadConsoleConfig();
const redis = connectRedis(config.REDIS_URL);
await requireNoEviction(redis, 'the console');
// Top-ups are committed in the journal before Redis credits them, and the billing ledger reads it.
const journal = config.DATABASE_URL === undefined ? undefined : await Journal.open(config.DATABASE_URL);
const app = await buildConsoleApp({ config, redis, ...(journal ? { journal } : {}) });
await app.listen({ host: config.CONSOLE_HOST, port: config.CONSOLE_PORT });
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, async () => {
    await app.close();
    await journal?.close();
    redis.disconnect();
  });
}
