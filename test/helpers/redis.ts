// A throwaway redis-server per test file: free port, no persistence, killed after. Tests never
// share state and never need a Redis already running. No mocks: this is the real server.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../core/free-port.ts';

export interface TestRedis {
  url: string;
  port: number;
  /** A new client; closed by stop(). */
  client(): Redis;
  stop(): Promise<void>;
}

export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'mp-redis-'));
  const proc: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const spawnError = new Promise<never>((_, reject) => {
    proc.on('error', (err) =>
      reject(
        new Error(`cannot start redis-server (install it: apt-get install -y redis-server): ${err.message}`),
      ),
    );
  });
  const clients: Redis[] = [];
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  // Refused connections while redis-server boots are expected; the loop below retries them.
  probe.on('error', () => {});
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await Promise.race([probe.connect().then(() => probe.ping()), spawnError]);
      break;
    } catch (err) {
      if (Date.now() > deadline || proc.exitCode !== null) {
        proc.kill('SIGKILL');
        throw err;
      }
      probe.disconnect();
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  probe.disconnect();
  const url = `redis://127.0.0.1:${port}`;
  return {
    url,
    port,
    client() {
      const c = new Redis(url);
      clients.push(c);
      return c;
    },
    async stop() {
      await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
      proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
