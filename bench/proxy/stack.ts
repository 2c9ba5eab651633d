// The three targets of the proxy benchmark, each in its own process: (a) the simulator, (b) the bare
// fastify + undici pass-through, (c) the full proxy on its own Redis with a funded account and key.
// Shared by run.ts (throughput and latency) and cpu.ts (CPU per request of each process).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../core/free-port.ts';
import { NODE_SERVICE_FLAGS } from '../../core/node-flags.ts';
import { startRedis } from '../../test/helpers/redis.ts';
import { seedChatModelAndKey } from '../../test/helpers/seed.ts';

export const root = fileURLToPath(new URL('../../', import.meta.url));
export const MODEL = 'bench/model';

/**
 * Seconds of load per target and payload before anything is measured. V8 compiles hot functions
 * on background threads for several seconds after a server starts: measured in the first seconds,
 * the proxy (far more code than the pass-through) spent ~40 µs per request compiling on helper
 * threads and ran partly unoptimized; a service in production has long since finished that.
 */
export const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 4);

export interface Target {
  name: string;
  url: string;
  pid: number;
}

export interface Stack {
  sim: Target;
  bare: Target;
  proxy: Target;
  /** The proxy's Redis server. */
  redisPid: number;
  redisUrl: string;
  headers: Record<string, string>;
  /** Request bodies: a short chat completion, and the same streamed with usage. */
  plain: string;
  streamed: string;
  messagesPlain: string;
  messagesStreamed: string;
  /** The same call on the Responses surface (store: false, as Codex sends it). */
  responsesPlain: string;
  responsesStreamed: string;
  /** The same with store: true (OpenAI's default): each response is also kept in Redis. */
  responsesPlainStored: string;
  responsesStreamedStored: string;
  stop(): Promise<void>;
}

/** Servers run as production runs them, compiled (scripts/build.sh); BENCH_TSX=1 runs the sources. */
const fromSources = process.env.BENCH_TSX === '1';

function server(
  children: ChildProcess[],
  file: string,
  args: string[],
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): ChildProcess {
  const entry = fromSources ? ['--import', 'tsx', file] : [`dist/${file.replace(/\.ts$/, '.js')}`];
  // All three servers run with the services' Node flags; BENCH_NODE_FLAGS='' runs them without.
  const flags = (process.env.BENCH_NODE_FLAGS ?? NODE_SERVICE_FLAGS.join(' ')).split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...flags, ...nodeArgs, ...entry, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', process.env.BENCH_PROXY_NODE_ARGS ? 'inherit' : 'ignore', 'inherit'],
  });
  children.push(child);
  return child;
}

async function waitUp(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`${url} never came up`);
}

export interface StackOptions {
  proxyEnv?: Record<string, string>;
  /** Writes a V8 CPU profile of the proxy (or the bare pass-through) into `dir` when it exits. */
  profile?: { dir: string; target: 'proxy' | 'bare' };
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  // BENCH_BUILT=1: dist/ is already built (e.g. by hand, with instrumentation); do not rebuild it.
  if (!fromSources && process.env.BENCH_BUILT !== '1')
    execFileSync(`${root}scripts/build.sh`, { stdio: 'inherit' });
  const children: ChildProcess[] = [];
  const redis = await startRedis();
  mkdirSync(join(root, 'bench', 'out'), { recursive: true });
  const dataDir = mkdtempSync(join(root, 'bench', 'out', 'proxy-data-'));
  const stop = async () => {
    // Servers first (the proxy gives its leases back to Redis on the way out), then Redis.
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGTERM');
          }),
      ),
    );
    await redis.stop().catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const [simPort, barePort, proxyPort] = [await freePort(), await freePort(), await freePort()];
    const simUrl = `http://127.0.0.1:${simPort}`;
    const r = redis.client();
    const { secret, kek } = await seedChatModelAndKey(r, {
      model: MODEL,
      engineUrl: simUrl,
      price: { input: '0.15', cachedInput: '0.075', output: '0.6' },
      credit: 5_000_000_000_000_000,
      name: 'bench',
    });
    const redisPid = Number(/process_id:(\d+)/.exec(await r.info('server'))?.[1]);

    const simArgs = ['--port', String(simPort), '--ttft-ms', '0', '--itl-ms', '0', '--models', MODEL];
    const sim = server(children, 'engines/simulator/main.ts', simArgs);
    const prof = (t: 'proxy' | 'bare') =>
      opts.profile?.target === t ? ['--cpu-prof', `--cpu-prof-dir=${opts.profile.dir}`] : [];
    const bareArgs = ['--port', String(barePort), '--upstream', simUrl];
    const bare = server(children, 'bench/proxy/bare.ts', bareArgs, {}, prof('bare'));
    const proxy = server(
      children,
      'proxy/main.ts',
      [],
      {
        REDIS_URL: redis.url,
        MODELPLANE_KEK: kek,
        PROXY_HOST: '127.0.0.1',
        PROXY_PORT: String(proxyPort),
        // /metrics has its own port (docs/security.md "Metrics port"): any free one, so replicas do
        // not collide.
        PROXY_METRICS_HOST: '127.0.0.1',
        PROXY_METRICS_PORT: '0',
        // Its settlement journal on the same disk as a production replica's (ext4 here, not tmpfs).
        PROXY_DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
        ...opts.proxyEnv,
      },
      // BENCH_PROXY_NODE_ARGS: extra Node flags for the proxy alone (experiments: GC flags, tracing).
      [...prof('proxy'), ...(process.env.BENCH_PROXY_NODE_ARGS ?? '').split(' ').filter(Boolean)],
    );
    const target = (name: string, url: string, child: ChildProcess): Target => ({
      name,
      url,
      pid: child.pid ?? 0,
    });
    const stack: Stack = {
      sim: target('(a) simulator', simUrl, sim),
      bare: target('(b) bare pass-through', `http://127.0.0.1:${barePort}`, bare),
      proxy: target('(c) full proxy', `http://127.0.0.1:${proxyPort}`, proxy),
      redisPid,
      redisUrl: redis.url,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
      plain: JSON.stringify({
        model: MODEL,
        messages: [{ role: 'user', content: 'Say hello to the benchmark in a few words.' }],
        max_tokens: 16,
      }),
      streamed: JSON.stringify({
        model: MODEL,
        messages: [{ role: 'user', content: 'Say hello to the benchmark in a few words.' }],
        max_tokens: 16,
        stream: true,
        stream_options: { include_usage: true },
      }),
      // The same call on the Messages surface (proxy only): POST /v1/messages.
      messagesPlain: JSON.stringify({
        model: MODEL,
        messages: [{ role: 'user', content: 'Say hello to the benchmark in a few words.' }],
        max_tokens: 16,
      }),
      messagesStreamed: JSON.stringify({
        model: MODEL,
        messages: [{ role: 'user', content: 'Say hello to the benchmark in a few words.' }],
        max_tokens: 16,
        stream: true,
      }),
      responsesPlain: JSON.stringify({
        model: MODEL,
        input: 'Say hello to the benchmark in a few words.',
        max_output_tokens: 16,
        store: false,
      }),
      responsesStreamed: JSON.stringify({
        model: MODEL,
        input: 'Say hello to the benchmark in a few words.',
        max_output_tokens: 16,
        store: false,
        stream: true,
      }),
      responsesPlainStored: JSON.stringify({
        model: MODEL,
        input: 'Say hello to the benchmark in a few words.',
        max_output_tokens: 16,
        store: true,
      }),
      responsesStreamedStored: JSON.stringify({
        model: MODEL,
        input: 'Say hello to the benchmark in a few words.',
        max_output_tokens: 16,
        store: true,
        stream: true,
      }),
      stop,
    };
    await Promise.all([stack.sim, stack.bare, stack.proxy].map((t) => waitUp(`${t.url}/v1/models`)));
    return stack;
  } catch (err) {
    await stop();
    throw err;
  }
}
