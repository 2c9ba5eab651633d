// The console process: `tsx console/main.ts`. Configuration from the environment (core/config.ts,
// README "Configuration"): REDIS_URL, MODELPLANE_KEK, CONSOLE_*.
import { loadConfig } from '../core/config.ts';
import { connectRedis } from '../core/redis-client.ts';
import { buildConsoleApp } from './app.ts';

const config = loadConfig();
const redis = connectRedis(config.REDIS_URL);
const app = await buildConsoleApp({ config, redis });
await app.listen({ host: config.CONSOLE_HOST, port: config.CONSOLE_PORT });
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, async () => {
    await app.close();
    redis.disconnect();
  });
}
