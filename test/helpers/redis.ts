// A throwaway redis-server per test file: free port, killed after. Tests never share state and
// never need a Redis already running. No mocks: this is the real server. By default nothing is
// persisted; `aof: true` keeps an append-only file fsynced on every write (production's setting
// where money is at stake), so a test can kill the server and start it again with its data.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../core/free-port.ts';
import type { Redis as AnyRedis } from '../../core/redis/client.ts';
import { startRedisCluster, type TestRedisCluster } from './redis-cluster.ts';

export interface TestRedis {
  url: string;
  port: number;
  /** Its data directory (the append-only file): a test may copy it away and back, or wipe it. */
  dir: string;
  /** A new client; closed by stop(). */
  client(): AnyRedis;
  /** A 3-primary + 3-replica Redis Cluster stands behind `url` (MODELPLANE_TEST_REDIS=cluster). */
  cluster: boolean;
  /** SIGKILLs the server (clients see the connection drop and reconnect by themselves). */
  kill(): Promise<void>;
  /** SIGSTOPs the server: a hung Redis (connections stay open, nothing is answered). */
  pause(): void;
  /** SIGCONTs it after pause(): it answers what queued up meanwhile. */
  resume(): void;
  /** Starts it again on the same port and data directory (after kill). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export interface TestRedisOptions {
  /** Persist every write to an append-only file (appendfsync always). */
  aof?: boolean;
  /** Make it a replica of this server (`--replicaof`). */
  replicaOf?: { port: number };
}

/**
 * With MODELPLANE_TEST_REDIS=cluster, a test that asks for a plain Redis gets a Redis Cluster
 * instead (test/helpers/redis-cluster.ts): the same suites prove the money path on both. Killing,
 * pausing or restarting "the" server has no meaning there; a test that does so runs on one Redis.
 */
export const testRedisIsCluster = process.env.MODELPLANE_TEST_REDIS === 'cluster';

export async function startRedis(opts: TestRedisOptions = {}): Promise<TestRedis> {
  if (testRedisIsCluster && !opts.aof && !opts.replicaOf) return clusterAsTestRedis();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'mp-redis-'));
  // A replica that attaches is served at once (the default waits 5 s for more replicas).
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--dir',
    dir,
    '--repl-diskless-sync-delay',
    '0',
    // What every part requires (core/redis/policy.ts): a full Redis refuses writes, never evicts.
    '--maxmemory-policy',
    'noeviction',
  ];
  args.push(...(opts.aof ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']));
  if (opts.replicaOf) args.push('--replicaof', '127.0.0.1', String(opts.replicaOf.port));
  let proc = await launch(args, port);
  const clients: Redis[] = [];
  const url = `redis://127.0.0.1:${port}`;
  return {
    url,
    port,
    dir,
    cluster: false,
    client() {
      const c = new Redis(url);
      c.on('error', () => {}); // a test that kills the server sees the failures where it looks
      clients.push(c);
      return c;
    },
    async kill() {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGKILL');
      await exited;
    },
    pause() {
      proc.kill('SIGSTOP');
    },
    resume() {
      proc.kill('SIGCONT');
    },
    async restart() {
      proc = await launch(args, port);
    },
    async stop() {
      proc.kill('SIGCONT'); // a paused server would leave quit() unanswered
      await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
      proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function launch(args: string[], port: number): Promise<ChildProcess> {
  const proc: ChildProcess = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const spawnError = new Promise<never>((_, reject) => {
    proc.on('error', (err) =>
      reject(
        new Error(`cannot start redis-server (install it: apt-get install -y redis-server): ${err.message}`),
      ),
    );
  });
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  // Refused connections while redis-server boots are expected; the loop below retries them.
  probe.on('error', () => {});
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      // PING answers LOADING while an append-only file is read back: wait for a real PONG.
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
  return proc;
}

/** A Redis Cluster behind the TestRedis interface (what one-server tests and harnesses take). */
export async function clusterAsTestRedis(c?: TestRedisCluster): Promise<TestRedis> {
  c ??= await startRedisCluster();
  const single = (what: string) => () => {
    throw new Error(`${what} needs one Redis server; this test runs on a Redis Cluster`);
  };
  return {
    url: c.url,
    port: c.nodes[0]!.port,
    dir: c.nodes[0]!.dir,
    cluster: true,
    client: () => c.client(),
    kill: single('kill()'),
    pause: single('pause()'),
    resume: single('resume()'),
    restart: single('restart()'),
    stop: () => c.stop(),
  };
}
