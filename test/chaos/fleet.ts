// The platform the way production runs it, for chaos tests: a Redis with an append-only file that
// can be killed and restarted, simulator engines, and proxy replicas as real processes
// (`proxy/main.ts`) that can be sent SIGTERM or SIGKILL and started again on their data directory.
// A load of streaming calls through the official openai SDK records what each client saw, so a
// test can hold the ledger to it: every delivered call charged exactly once, no refused call charged.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { expect } from 'vitest';
import { Accounts } from '../../core/accounts/accounts.ts';
import { Metering } from '../../core/billing/index.ts';
import { CatalogueStore } from '../../core/catalogue/index.ts';
import { freePort } from '../../core/free-port.ts';
import { ApiKeys } from '../../core/keys/index.ts';
import { NODE_SERVICE_FLAGS } from '../../core/node-flags.ts';
import { type UsageEntry, usageRecords } from '../../core/usage/usage.ts';
import { type Simulator, startSimulator } from '../../engines/simulator/server.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { runLogStream } from '../helpers/run-log.ts';

export const MODEL = 'Chaos/Chat';
const repo = new URL('../../', import.meta.url).pathname;

export interface ProxyProcess {
  name: string;
  url: string;
  /** Its /metrics, on a port of its own (docs/security.md "Metrics port"). */
  metricsUrl: string;
  dataDir: string;
  proc: ChildProcess;
  /** Resolves with the exit code (null after a signal) once the process is gone. */
  exited: Promise<number | null>;
  /** What it printed (warnings and errors: LOG_LEVEL warn). */
  output(): string;
}

export interface Fleet {
  redis: TestRedis;
  sims: Simulator[];
  accountId: string;
  secret: string;
  /** Another funded account with a key of its own (accounts on several cluster shards). */
  addAccount(credit: number): Promise<{ accountId: string; secret: string }>;
  /** Starts a proxy replica (on `dataDir`, to restart one on its journal) and waits until it is ready. */
  startProxy(name: string, env?: Record<string, string>, dataDir?: string): Promise<ProxyProcess>;
  stop(): Promise<void>;
}

export async function startFleet(o: {
  credit: number;
  sim?: Parameters<typeof startSimulator>[0];
  /** Another Redis than one server with an append-only file (a Redis Cluster); stopped with the fleet. */
  redis?: TestRedis;
}): Promise<Fleet> {
  const redis = o.redis ?? (await startRedis({ aof: true }));
  const sims = await Promise.all(
    [0, 1].map(() => startSimulator({ ttftMs: 5, itlMs: 5, models: [MODEL], ...o.sim })),
  );
  const r = redis.client();
  await new CatalogueStore(r).put({
    id: MODEL,
    kind: 'chat',
    pricing: { USD: { input: '1', cachedInput: '0.5', output: '2' } },
    endpoints: sims.map((s) => ({ url: s.url })),
    created: 1,
  });
  const kek = randomBytes(32).toString('hex');
  const account = await new Accounts(r).create({ name: 'chaos', country: 'US' });
  await new Metering(r).topUp({ accountId: account.id, topUpId: 'chaos', amount: o.credit });
  const { secret } = await new ApiKeys(r, { brand: 'service', kek: Buffer.from(kek, 'hex') }).create(
    account.id,
    {
      name: 'chaos',
    },
  );
  const started: ProxyProcess[] = [];
  const dirs: string[] = [];
  return {
    redis,
    sims,
    accountId: account.id,
    secret,
    async addAccount(credit) {
      const a = await new Accounts(r).create({ name: 'chaos', country: 'US' });
      await new Metering(r).topUp({ accountId: a.id, topUpId: 'chaos', amount: credit });
      const keys = new ApiKeys(r, { brand: 'service', kek: Buffer.from(kek, 'hex') });
      return { accountId: a.id, secret: (await keys.create(a.id, { name: 'chaos' })).secret };
    },
    async startProxy(name, env = {}, dataDir) {
      const dir = dataDir ?? mkdtempSync(join(tmpdir(), `mp-chaos-${name}-`));
      if (dataDir === undefined) dirs.push(dir);
      // A replica whose first Redis commands time out exits (1), and its pod is started again
      // (restartPolicy Always). Tests that set a short REDIS_COMMAND_TIMEOUT_MS meet that on a loaded
      // CI machine, where a cold process can miss the CPU for longer: the harness restarts it as a
      // kubelet would, twice at most; any other exit fails at once.
      for (let attempt = 1; ; attempt++) {
        try {
          return await startOnce(name, env, dir);
        } catch (err) {
          if (!(err instanceof StartTimedOut) || attempt >= 3) throw err;
        }
      }
    },
    async stop() {
      for (const p of started)
        if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill('SIGKILL');
      await Promise.all(started.map((p) => p.exited));
      await Promise.all(sims.map((s) => s.close()));
      await redis.stop();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };

  async function startOnce(name: string, env: Record<string, string>, dir: string): Promise<ProxyProcess> {
    const port = await freePort();
    const metricsPort = await freePort();
    const proc = spawn(process.execPath, [...NODE_SERVICE_FLAGS, '--import', 'tsx', 'proxy/main.ts'], {
      cwd: repo,
      env: {
        ...process.env,
        REDIS_URL: redis.url,
        MODELPLANE_KEK: kek,
        PROXY_HOST: '127.0.0.1',
        PROXY_PORT: String(port),
        // /metrics has its own port (docs/security.md "Metrics port"), one per replica.
        PROXY_METRICS_HOST: '127.0.0.1',
        PROXY_METRICS_PORT: String(metricsPort),
        PROXY_DATA_DIR: dir,
        LOG_LEVEL: 'warn',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    // The process's log goes to the run's log folder too, for the final credential scan.
    const runLog = runLogStream(`chaos-${name}`);
    proc.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
      runLog.write(b);
    });
    proc.stderr?.on('data', (b: Buffer) => {
      out += b.toString();
      runLog.write(b);
    });
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    const p: ProxyProcess = {
      name,
      url: `http://127.0.0.1:${port}`,
      metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
      dataDir: dir,
      proc,
      exited,
      output: () => out,
    };
    started.push(p);
    // Loaded CI machines start a replica from source (tsx) slowly: CI's run once needed over 30 s
    // with two replicas starting at once. The error says what /readyz last answered, if anything.
    const deadline = Date.now() + 90_000;
    let last = 'nothing: not listening';
    for (;;) {
      if (proc.exitCode !== null) {
        await exited;
        const message = `proxy ${name} exited (${proc.exitCode}):\n${out}`;
        throw /Command timed out/.test(out) ? new StartTimedOut(message) : new Error(message);
      }
      try {
        const res = await fetch(`${p.url}/readyz`);
        if (res.ok) return p;
        last = `${res.status} ${await res.text()}`;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline)
        throw new Error(`proxy ${name} never became ready; /readyz last answered ${last}:\n${out}`);
      await new Promise((res) => setTimeout(res, 100));
    }
  }
}

/** A replica exited at start because its Redis commands timed out: started again (startProxy). */
class StartTimedOut extends Error {}

/** What a client saw of one call. */
export interface CallOutcome {
  requestId: string | null;
  /** `delivered`: the whole stream ([DONE]); `cut`: 200, then an error or a dropped connection; `refused`: an error status; `unreachable`: no answer at all. */
  outcome: 'delivered' | 'cut' | 'refused' | 'unreachable';
  status: number | null;
  proxy: string;
  /** Date.now() when the client saw the call end. */
  endedAt: number;
}

/**
 * Streaming calls from `workers` clients in a loop until `stop()` is called, spread over the
 * proxies `targets()` returns at each call.
 */
export function streamingLoad(
  fleet: Fleet,
  targets: () => ProxyProcess[],
  /** maxTokens: each call's, knowing which proxy it goes to. */
  o: { workers: number; maxTokens: (proxy: string) => number },
): { calls: CallOutcome[]; stop: () => Promise<void> } {
  const calls: CallOutcome[] = [];
  let running = true;
  const worker = async (w: number) => {
    for (let i = 0; running; i++) {
      const live = targets();
      if (live.length === 0) {
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      const p = live[(w + i) % live.length]!;
      const client = new OpenAI({
        apiKey: fleet.secret,
        baseURL: `${p.url}/v1`,
        maxRetries: 0,
        timeout: 20_000,
      });
      const call: CallOutcome = {
        requestId: null,
        outcome: 'unreachable',
        status: null,
        proxy: p.name,
        endedAt: 0,
      };
      calls.push(call);
      try {
        const { data, response } = await client.chat.completions
          .create({
            model: MODEL,
            messages: [{ role: 'user', content: `chaos ${w} ${i}` }],
            stream: true,
            stream_options: { include_usage: true },
            max_tokens: o.maxTokens(p.name),
            ignore_eos: true,
          } as OpenAI.Chat.ChatCompletionCreateParamsStreaming)
          .withResponse();
        call.requestId = response.headers.get('x-request-id');
        call.status = response.status;
        call.outcome = 'cut';
        for await (const _ of data);
        call.outcome = 'delivered';
      } catch (err) {
        if (err instanceof OpenAI.APIError && err.status !== undefined) {
          call.status = err.status;
          call.requestId ??= err.headers?.get('x-request-id') ?? null;
          if (call.outcome !== 'cut') call.outcome = 'refused';
        }
        await new Promise((r) => setTimeout(r, 20));
      } finally {
        call.endedAt = Date.now();
      }
    }
  };
  const done = Promise.all(Array.from({ length: o.workers }, (_, w) => worker(w)));
  return {
    calls,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

/** The account's charges by request id. */
export async function chargesByRequest(fleet: Fleet): Promise<Map<string, UsageEntry[]>> {
  const byReq = new Map<string, UsageEntry[]>();
  for (const e of await usageRecords(fleet.redis.client(), fleet.accountId, { count: 100_000 })) {
    if (e.type !== 'charge' || e.requestId === null) continue;
    const list = byReq.get(e.requestId);
    if (list) list.push(e);
    else byReq.set(e.requestId, [e]);
  }
  return byReq;
}

/**
 * How a chaos run ends: every charge belongs to a call a client made (`made`: the request ids the
 * clients saw), nothing stays held, and the ledger checks out.
 */
export async function expectFleetSettled(
  fleet: Fleet,
  charges: Map<string, UsageEntry[]>,
  made: Iterable<string | null>,
): Promise<void> {
  const seen = new Set(made);
  for (const id of charges.keys()) expect(seen.has(id), `charge of unknown ${id}`).toBe(true);
  const r = fleet.redis.client();
  expect(Number(await r.hget(`{a:${fleet.accountId}}:account`, 'held'))).toBe(0);
  await expectLedgerClean(r, [fleet.accountId]);
}

/** Waits until `check` holds (polling), or fails naming `what`. */
export async function eventually(
  check: () => Promise<boolean>,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `modelplane ledger check` run as the operator runs it (a process), against the fleet's Redis. */
export async function ledgerCheckCli(
  fleet: Fleet,
  env: Record<string, string> = {},
): Promise<{ code: number; output: string }> {
  const { execFile } = await import('node:child_process');
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['cli/bin.mjs', 'ledger', 'check'],
      {
        cwd: repo,
        env: {
          ...process.env,
          REDIS_URL: fleet.redis.url,
          MODELPLANE_KEK: randomBytes(32).toString('hex'),
          ...env,
        },
      },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}
