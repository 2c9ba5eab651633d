// `make dev`: the whole platform on this machine with embedded defaults (cli/platform.ts): a Redis of
// its own (AOF on, data in .data/redis) unless REDIS_URL is set, a PostgreSQL of its own (the
// durable journal, data in .data/postgres) unless DATABASE_URL is set, the operator on the local runtime
// (Model YAML in examples/models, simulator engines as child processes), the proxy and the console;
// a demo account with credits, whose key and console user it prints. Ctrl-C stops all it started.
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Platform, startPlatform } from './platform.ts';

async function main(): Promise<void> {
  let stopping = false;
  let platform: Platform | null = null;
  // Declared before the start: a part that exits once the platform is up stops everything. (A part
  // that exits while it starts makes startPlatform stop everything and reject, naming the part.)
  const shutdown = async (code: number) => {
    stopping = true;
    await platform?.stop();
    process.exit(code);
  };
  platform = await startPlatform({
    dataDir: resolve('.data'),
    modelsDir: 'examples/models',
    ...(process.env.REDIS_URL ? { redisUrl: process.env.REDIS_URL } : {}),
    redisPort: Number(process.env.DEV_REDIS_PORT ?? 6390),
    // The durable journal: DATABASE_URL, else a PostgreSQL of its own (data in .data/postgres).
    ...(process.env.DATABASE_URL
      ? { databaseUrl: process.env.DATABASE_URL }
      : { postgresPort: Number(process.env.DEV_POSTGRES_PORT ?? 5439) }),
    proxyPort: Number(process.env.PROXY_PORT ?? 8080),
    proxyMetricsPort: Number(process.env.PROXY_METRICS_PORT ?? 9091),
    consolePort: Number(process.env.CONSOLE_PORT ?? 3000),
    operatorPort: Number(process.env.OPERATOR_PORT ?? 9090),
    onExit: (name, code) => {
      if (stopping) return;
      console.error(`[${name}] exited (${code}); stopping everything`);
      void shutdown(1);
    },
  });
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  const { demo, apiBase, consoleUrl } = platform;
  const base = apiBase.replace(/\/v1$/, '');
  console.log(`
modelplane dev is up (engines are the simulator, not real models).
  Chat-completions base: ${apiBase}
  Messages base:         ${base}  (Anthropic SDKs: the key as x-api-key)
  Demo account:          ${demo.accountId} (balance ${demo.balance} USD)
  API key:               ${demo.secret}

  curl ${apiBase}/models -H "Authorization: Bearer ${demo.secret}"
  curl ${apiBase}/chat/completions -H "Authorization: Bearer ${demo.secret}" -H 'Content-Type: application/json' \\
    -d '{"model":"Meta-Llama/Llama-3.1-8B-Instruct","messages":[{"role":"user","content":"Hello"}]}'

  Proxy metrics:         http://localhost:${process.env.PROXY_METRICS_PORT ?? 9091}/metrics (not on the API port)
  Console:               ${consoleUrl}/api (sign in as ${demo.email} / ${demo.password})
  API reference:         ${consoleUrl}/docs
  Journal (PostgreSQL):  ${platform.databaseUrl ?? '(none)'}${process.env.DATABASE_URL ? '' : ` (data in ${realpathSync(resolve('.data', 'postgres'))})`}
  Admin CLI: npx modelplane accounts show ${demo.accountId}
Ctrl-C stops everything.`);
}

main().catch((err) => {
  // startPlatform has stopped every part it started before rejecting: no port stays held.
  console.error(`make dev could not start: ${(err as Error).message}`);
  process.exit(1);
});
