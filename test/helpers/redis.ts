// A throwaway redis-server per test file: free port, no persistence, killed after. Tests never
// share state and never need a Redis already running. No mocks: this is the real server.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export interface TestRedis {
  url: string;
  port: number;
  /** A new client; closed by stop(). */
  client(): Redis;
  stop(): Promise<void>;
}

// Ports handed out by this process, never handed out twice (etcd asks for three in a row).
const handedOut = new Set<number>();

/** Lowest port of the kernel's ephemeral range (bind(0) and outgoing connections draw from it). */
function ephemeralFloor(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 11_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/**
 * A port free now for a child process to listen on. Chosen at random below the ephemeral range,
 * not with bind(0): a port from that range can be taken by any outgoing loopback connection of
 * the other test files between our check and the child's bind (CI saw etcd exit on it).
 */
export async function freePort(): Promise<number> {
  const floor = 10_000;
  const span = ephemeralFloor() - floor;
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = floor + Math.floor(Math.random() * span);
    if (handedOut.has(port) || !(await canListen(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error('no free port below the ephemeral range after 200 tries');
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
