// The proxy's start-up on a Redis that does not answer in time (issue 48 item 12): `make dev` on a
// loaded machine once died with only "Command timed out". The real process (proxy/main.ts) against
// a real redis-server, SIGSTOPped: a Redis that comes back within PROXY_STARTUP_REDIS_RETRY_MS is
// waited for (each retry logged with the step and the setting) and the replica becomes ready; one
// that does not is an exit naming the step that timed out and REDIS_COMMAND_TIMEOUT_MS.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../core/free-port.ts';
import { NODE_SERVICE_FLAGS } from '../../core/node-flags.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { runLogStream } from '../helpers/run-log.ts';

const repo = new URL('../../', import.meta.url).pathname;
let redis: TestRedis;
const dirs: string[] = [];
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  redis.resume();
  await redis?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Starts proxy/main.ts; resolves when it is ready (true) or has exited (false), with its output. */
async function startProxy(
  env: Record<string, string>,
  onOutput: (out: string) => void = () => {},
): Promise<{ ready: boolean; out: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'mp-startup-'));
  dirs.push(dir);
  const port = await freePort();
  const proc = spawn(process.execPath, [...NODE_SERVICE_FLAGS, '--import', 'tsx', 'proxy/main.ts'], {
    cwd: repo,
    env: {
      ...process.env,
      REDIS_URL: redis.url,
      MODELPLANE_KEK: randomBytes(32).toString('hex'),
      PROXY_HOST: '127.0.0.1',
      PROXY_PORT: String(port),
      PROXY_METRICS_HOST: '127.0.0.1',
      PROXY_METRICS_PORT: String(await freePort()),
      PROXY_DATA_DIR: dir,
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const runLog = runLogStream('proxy-startup');
  for (const s of [proc.stdout, proc.stderr])
    s?.on('data', (b: Buffer) => {
      out += b.toString();
      runLog.write(b);
      onOutput(out);
    });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const deadline = Date.now() + 90_000;
  let ready = false;
  while (proc.exitCode === null && Date.now() < deadline) {
    ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  if (proc.exitCode !== null) await exited;
  return {
    ready,
    out,
    stop: async () => {
      if (proc.exitCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}

describe('the proxy starting while Redis does not answer', () => {
  it('waits for a Redis that answers again within PROXY_STARTUP_REDIS_RETRY_MS, saying which step timed out', async () => {
    redis.pause();
    // Redis answers again once the proxy has met it hung and said so (a cold start from source
    // takes seconds on a loaded machine: a fixed delay could resume it before the first command).
    let resumed = false;
    const p = await startProxy(
      { REDIS_COMMAND_TIMEOUT_MS: '300', PROXY_STARTUP_REDIS_RETRY_MS: '60000' },
      (out) => {
        if (!resumed && /retrying in/.test(out)) {
          resumed = true;
          setTimeout(() => redis.resume(), 1_000);
        }
      },
    );
    try {
      expect(p.out).toMatch(
        /start-up step "[^"]+" failed: Command timed out .*REDIS_COMMAND_TIMEOUT_MS \(300 ms\).*retrying in \d+ ms/,
      );
      expect(p.ready).toBe(true);
    } finally {
      await p.stop();
    }
  }, 120_000);

  it('exits naming the step that timed out and the settings, once PROXY_STARTUP_REDIS_RETRY_MS is over', async () => {
    redis.pause();
    try {
      const p = await startProxy({ REDIS_COMMAND_TIMEOUT_MS: '300', PROXY_STARTUP_REDIS_RETRY_MS: '1500' });
      expect(p.ready).toBe(false);
      const last = p.out.trim().split('\n').at(-1)!;
      expect(last).toMatch(
        /^the proxy's start-up step "checking Redis \(INFO memory\)" failed: Command timed out \(Redis did not answer one command within REDIS_COMMAND_TIMEOUT_MS \(300 ms\); raise it .*, tried \d+ times over PROXY_STARTUP_REDIS_RETRY_MS \(1500 ms\)\)$/,
      );
      await p.stop();
    } finally {
      redis.resume();
    }
  }, 120_000);
});
