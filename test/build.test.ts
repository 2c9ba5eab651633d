// The deployable form: scripts/build.sh compiles the services to dist/, and the compiled proxy,
// started exactly as package.json's start:proxy says, serves against a real Redis (the Lua
// scripts must have been copied next to the compiled billing code for /readyz and billing to work).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Metering } from '../core/billing/index.ts';
import { freePort } from '../core/free-port.ts';
import { NODE_SERVICE_FLAGS } from '../core/node-flags.ts';
import { startSimulator } from '../engines/simulator/server.ts';
import { startRedis } from './helpers/redis.ts';
import { seedChatModelAndKey } from './helpers/seed.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { scripts: Record<string, string> };
const stops: (() => Promise<unknown> | undefined)[] = [];
afterAll(async () => {
  for (const s of stops.reverse()) await s();
});

describe('compiled services', () => {
  it('the start scripts run the compiled services with the services Node flags', () => {
    for (const name of ['start:proxy', 'start:operator']) {
      const argv = pkg.scripts[name]!.split(' ');
      expect(argv[0]).toBe('node');
      expect(argv.slice(1, -1)).toEqual([...NODE_SERVICE_FLAGS]);
      expect(argv.at(-1)).toMatch(/^dist\/.+\.js$/);
    }
  });

  it('start:proxy serves a chat completion and bills it', async () => {
    execFileSync(`${root}scripts/build.sh`, { stdio: 'pipe' });
    const redis = await startRedis();
    stops.push(() => redis.stop());
    const sim = await startSimulator({ ttftMs: 0, itlMs: 0, models: ['Dist/Model'] });
    stops.push(() => sim.close());
    const r = redis.client();
    const { secret, kek, accountId } = await seedChatModelAndKey(r, {
      model: 'Dist/Model',
      engineUrl: sim.url,
      price: { input: '1', output: '1' },
      credit: 10_000_000_000,
      name: 'dist',
    });
    const port = await freePort();
    const dataDir = mkdtempSync(join(tmpdir(), 'mp-build-'));
    stops.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const [cmd, ...args] = pkg.scripts['start:proxy']!.split(' ');
    const proxy: ChildProcess = spawn(cmd === 'node' ? process.execPath : cmd!, args, {
      cwd: root,
      env: {
        ...process.env,
        REDIS_URL: redis.url,
        MODELPLANE_KEK: kek,
        PROXY_HOST: '127.0.0.1',
        PROXY_PORT: String(port),
        PROXY_METRICS_HOST: '127.0.0.1',
        PROXY_METRICS_PORT: '0', // any free port: tests run side by side
        LOG_LEVEL: 'warn',
        // Its own journal: the default (.data/proxy) may hold a make dev run's, which belongs to
        // make dev's Redis and would make this proxy refuse the test's fresh one (not ready).
        PROXY_DATA_DIR: dataDir,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const exited = new Promise((resolve) => proxy.once('exit', resolve));
    stops.push(() => {
      proxy.kill('SIGTERM');
      return exited;
    });
    const base = `http://127.0.0.1:${port}`;
    let ready = 0;
    // Up to a minute: a compiled proxy starts in well under a second, but not on a loaded machine.
    for (const deadline = Date.now() + 60_000; Date.now() < deadline && ready !== 200; ) {
      ready = await fetch(`${base}/readyz`).then(
        (res) => res.status,
        () => 0,
      );
      if (ready !== 200) await new Promise((res) => setTimeout(res, 100));
    }
    expect(ready).toBe(200);
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'dist/model',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 3,
      }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBe('Dist/Model');
    // A clean shutdown lands the lease's batched settle: the account is charged.
    proxy.kill('SIGTERM');
    await exited;
    const { balance } = await new Metering(r).balance(accountId);
    expect(balance).toBeLessThan(10_000_000_000);
  }, 60_000);
});
