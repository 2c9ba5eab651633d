// A throwaway Redis Cluster per test file: three primaries and three replicas (`redis-server
// --cluster-enabled yes` ×6 on free ports in a temp dir, joined by `redis-cli --cluster create
// --cluster-replicas 1`), the real thing the platform runs on past one Redis. Killed after.
// `cluster-node-timeout` is short so a killed primary's replica takes over within seconds.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis as Single } from 'ioredis';
import { freePort } from '../../core/free-port.ts';
import { connectRedis, type Redis } from '../../core/redis/client.ts';

const run = promisify(execFile);

export interface ClusterNode {
  port: number;
  busPort: number;
  dir: string;
  proc: ChildProcess;
}

export interface TestRedisCluster {
  /** `redis+cluster://127.0.0.1:p1,...` naming every node (what REDIS_URL takes). */
  url: string;
  nodes: ClusterNode[];
  /** A new cluster client; closed by stop(). */
  client(): Redis;
  /** A plain connection to one node (CLUSTER commands, INFO). */
  node(port: number): Single;
  /** The port of the primary that holds `key` now. */
  primaryOf(key: string): Promise<number>;
  /** The port of the replica that follows the primary on `port`. */
  replicaOf(port: number): Promise<number>;
  /** SIGKILLs the node on `port`. */
  kill(port: number): Promise<void>;
  /**
   * Starts a killed node again on its port, data directory and nodes.conf (with its AOF when the
   * cluster has one): it rejoins the cluster, as a replica of whichever node took its slots.
   */
  restart(port: number): Promise<void>;
  /** SIGSTOPs / SIGCONTs the node on `port` (a replica that stops taking the primary's writes). */
  pause(port: number): void;
  resume(port: number): void;
  /** Waits until every live node says the cluster is ok and `port`'s slots have another primary. */
  waitForFailover(deadPort: number): Promise<void>;
  stop(): Promise<void>;
}

const NODE_TIMEOUT_MS = 2_000;

export async function startRedisCluster(o: { aof?: boolean } = {}): Promise<TestRedisCluster> {
  const root = mkdtempSync(join(tmpdir(), 'mp-redis-cluster-'));
  const nodes: ClusterNode[] = [];
  const clients: Redis[] = [];
  const plain: Single[] = [];
  const stopAll = () => {
    for (const n of nodes) n.proc.kill('SIGKILL');
  };
  const spawnNode = (port: number, busPort: number, dir: string) =>
    spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--cluster-port',
        String(busPort),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, 'nodes.conf'),
        '--cluster-node-timeout',
        String(NODE_TIMEOUT_MS),
        '--save',
        '',
        '--appendonly',
        o.aof ? 'yes' : 'no',
        '--dir',
        dir,
        '--repl-diskless-sync-delay',
        '0',
      ],
      { stdio: 'ignore' },
    );
  try {
    for (let i = 0; i < 6; i++) {
      const port = await freePort();
      const busPort = await freePort();
      const dir = join(root, String(port));
      mkdirSync(dir);
      nodes.push({ port, busPort, dir, proc: spawnNode(port, busPort, dir) });
    }
    await Promise.all(nodes.map((n) => untilPong(n)));
    await run('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ]);
    await untilAllOk(nodes);
  } catch (err) {
    stopAll();
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
  const url = `redis+cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`;
  const nodeClient = (port: number) => {
    const c = new Single({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => null });
    c.on('error', () => {});
    plain.push(c);
    return c;
  };
  const cluster: TestRedisCluster = {
    url,
    nodes,
    client() {
      const c = connectRedis(url);
      c.on('error', () => {}); // a test that kills a node sees the failures where it looks
      clients.push(c);
      return c;
    },
    node: nodeClient,
    async primaryOf(key) {
      const live = nodes.find((n) => n.proc.exitCode === null && n.proc.signalCode === null)!;
      const c = nodeClient(live.port);
      const slot = (await c.cluster('KEYSLOT', key)) as number;
      const ranges = await c.cluster('SLOTS');
      const range = ranges.find(([from, to]) => slot >= from && slot <= to);
      if (!range) throw new Error(`no node serves slot ${slot}`);
      return range[2]![1];
    },
    async replicaOf(port) {
      const info = await nodeClient(port).info('replication');
      const m = /slave0:ip=[^,]+,port=(\d+)/.exec(info);
      if (m === null) throw new Error(`the primary on ${port} has no replica:\n${info}`);
      return Number(m[1]);
    },
    async restart(port) {
      const n = nodes.find((x) => x.port === port)!;
      n.proc = spawnNode(n.port, n.busPort, n.dir);
      await untilPong(n);
    },
    pause(port) {
      nodes.find((x) => x.port === port)!.proc.kill('SIGSTOP');
    },
    resume(port) {
      nodes.find((x) => x.port === port)!.proc.kill('SIGCONT');
    },
    async kill(port) {
      const n = nodes.find((x) => x.port === port)!;
      const exited = new Promise((r) => n.proc.once('exit', r));
      n.proc.kill('SIGKILL');
      await exited;
    },
    async waitForFailover(deadPort) {
      const live = nodes.filter(
        (n) => n.port !== deadPort && n.proc.exitCode === null && n.proc.signalCode === null,
      );
      await untilAllOk(live, 60_000, (slots) => slots.every((s) => s[2]?.[1] !== deadPort));
    },
    async stop() {
      for (const n of nodes) n.proc.kill('SIGCONT'); // a paused node would leave quit() unanswered
      await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
      for (const c of plain) c.disconnect();
      stopAll();
      rmSync(root, { recursive: true, force: true });
    },
  };
  return cluster;
}

async function untilPong(n: ClusterNode): Promise<void> {
  const c = new Single({ port: n.port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  c.on('error', () => {});
  const deadline = Date.now() + 15_000;
  try {
    for (;;) {
      try {
        await c.connect();
        await c.ping();
        return;
      } catch (err) {
        if (n.proc.exitCode !== null)
          throw new Error(
            `redis-server on ${n.port} exited (${n.proc.exitCode}); is redis-server installed?`,
          );
        if (Date.now() > deadline) throw err;
        c.disconnect();
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  } finally {
    c.disconnect();
  }
}

/** Every node says cluster_state:ok and all of them agree every slot is served (and `also` holds). */
async function untilAllOk(
  nodes: ClusterNode[],
  deadlineMs = 60_000,
  also: (slots: [number, number, ...[string, number, string, unknown[]][]][]) => boolean = () => true,
): Promise<void> {
  const clients = nodes.map((n) => {
    const c = new Single({ port: n.port, host: '127.0.0.1', maxRetriesPerRequest: 0 });
    c.on('error', () => {});
    return c;
  });
  const deadline = Date.now() + deadlineMs;
  let last = '';
  try {
    for (;;) {
      try {
        const states = await Promise.all(
          clients.map(async (c) => {
            const info = (await c.cluster('INFO')) as string;
            const slots = await c.cluster('SLOTS');
            const served = slots.reduce((sum, [from, to]) => sum + to - from + 1, 0);
            return /cluster_state:ok/.test(info) && served === 16384 && also(slots);
          }),
        );
        if (states.every(Boolean)) return;
        last = `${states.filter(Boolean).length} of ${states.length} nodes ready`;
      } catch (err) {
        last = (err as Error).message;
      }
      if (Date.now() > deadline) throw new Error(`the Redis Cluster never became ok: ${last}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    for (const c of clients) c.disconnect();
  }
}
