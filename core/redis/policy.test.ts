// Every part refuses an evicting Redis at start (core/redis/policy.ts), saying why; the test
// servers and `make dev` run noeviction.
import { describe, expect, it } from 'vitest';
import { redisForFile } from '../../test/helpers/redis-per-file.ts';
import { requireNoEviction } from './policy.ts';

const r = redisForFile();

describe('requireNoEviction', () => {
  it('passes a noeviction Redis and refuses any evicting policy, naming it and why', async () => {
    await expect(requireNoEviction(r.redis, 'the proxy')).resolves.toBeUndefined();
    for (const policy of ['allkeys-lru', 'volatile-ttl', 'allkeys-random']) {
      await r.redis.config('SET', 'maxmemory-policy', policy);
      await expect(requireNoEviction(r.redis, 'the proxy')).rejects.toThrow(
        new RegExp(
          `the proxy refuses this Redis: its maxmemory-policy is ${policy}.*idempotency.*noeviction`,
        ),
      );
    }
    await r.redis.config('SET', 'maxmemory-policy', 'noeviction');
    await expect(requireNoEviction(r.redis, 'the console')).resolves.toBeUndefined();
  });
});

describe('every part at start', () => {
  it('the proxy, the console and the operator exit at start on an evicting Redis, saying why', async () => {
    const { randomBytes } = await import('node:crypto');
    await r.redis.config('SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      for (const [part, entry, args] of [
        ['the proxy', 'proxy/main.ts', []],
        ['the console', 'console/main.ts', []],
        [
          'the operator',
          'operator/main.ts',
          ['--runtime', 'local', '--models-dir', 'examples/models', '--port', '0'],
        ],
      ] as const) {
        const { code, said } = await run(['--import', 'tsx', entry, ...args], {
          REDIS_URL: r.server.url,
          MODELPLANE_KEK: randomBytes(32).toString('hex'),
          PROXY_PORT: '0',
          PROXY_METRICS_PORT: '0',
          CONSOLE_PORT: '0',
          PROXY_DATA_DIR: `${r.server.dir}/proxy`,
          MEDIA_DIR: `${r.server.dir}/media`,
        });
        expect(code, `${part} said: ${said}`).not.toBe(0);
        expect(said).toContain(`${part} refuses this Redis: its maxmemory-policy is allkeys-lru`);
      }
    } finally {
      await r.redis.config('SET', 'maxmemory-policy', 'noeviction');
    }
  }, 120_000);
});

/** Runs node with `args` and these variables: its exit code and everything it printed. */
async function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; said: string }> {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let said = '';
  child.stdout.on('data', (c: Buffer) => {
    said += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    said += c.toString();
  });
  const code = await new Promise<number | null>((res) => child.once('exit', res));
  return { code, said };
}

/** Runs `modelplane <args>` (cli/bin.mjs, as an operator would) on this file's Redis. */
const cli = (args: string[]) =>
  run(['cli/bin.mjs', ...args], { REDIS_URL: r.server.url, MODELPLANE_KEK: KEK });
const KEK = '11'.repeat(32);

describe('the CLI', () => {
  it('every command that writes (credits, keys, accounts, top-ups, users) exits on an evicting Redis, saying why, having written nothing; reads still run', async () => {
    const { Accounts } = await import('../accounts/accounts.ts');
    const { Metering } = await import('../billing/index.ts');
    const { ApiKeys } = await import('../keys/index.ts');
    const account = await new Accounts(r.redis).create({ name: 'Evicted', country: 'US' });
    await r.redis.config('SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      for (const [name, args] of [
        ['credits grant', ['credits', 'grant', account.id, '5']],
        ['keys create', ['keys', 'create', account.id, '--name', 'ci']],
        ['accounts create', ['accounts', 'create', '--name', 'Another', '--credits', '3']],
        ['topups approve', ['topups', 'approve', 'topup_0123456789abcdef01234567']],
        [
          'users create',
          [
            'users',
            'create',
            '--email',
            'x@example.com',
            '--account',
            account.id,
            '--password',
            'a long password',
          ],
        ],
      ] as const) {
        const { code, said } = await cli([...args]);
        expect(code, `${name} said: ${said}`).toBe(1);
        expect(said).toContain(`modelplane ${name} refuses this Redis: its maxmemory-policy is allkeys-lru`);
      }
      expect((await new Metering(r.redis).balance(account.id)).balance).toBe(0);
      expect(
        await new ApiKeys(r.redis, { brand: 'service', kek: Buffer.from(KEK, 'hex') }).list(account.id),
      ).toEqual([]);
      expect((await new Accounts(r.redis).list()).map((a) => a.name)).toEqual(['Evicted']);
      // A read still runs: the operator can look at what an evicting Redis holds.
      const shown = await cli(['accounts', 'show', account.id]);
      expect(shown.code, shown.said).toBe(0);
    } finally {
      await r.redis.config('SET', 'maxmemory-policy', 'noeviction');
    }
    // The same command passes once the policy is noeviction.
    const granted = await cli(['credits', 'grant', account.id, '5']);
    expect(granted.code, granted.said).toBe(0);
    expect((await new Metering(r.redis).balance(account.id)).balance).toBe(5_000_000_000);
  }, 120_000);
});

describe('make dev on a given Redis', () => {
  it('refuses an evicting REDIS_URL before starting anything, saying why', async () => {
    const { startPlatform } = await import('../../cli/platform.ts');
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dataDir = mkdtempSync(join(tmpdir(), 'mp-evicting-'));
    await r.redis.config('SET', 'maxmemory-policy', 'volatile-lru');
    try {
      await expect(
        startPlatform({
          dataDir,
          modelsDir: 'examples/models',
          redisUrl: r.server.url,
          redisPort: 0,
          proxyPort: 0,
          consolePort: 0,
          operatorPort: 0,
        }),
      ).rejects.toThrow(/make dev refuses this Redis: its maxmemory-policy is volatile-lru/);
    } finally {
      await r.redis.config('SET', 'maxmemory-policy', 'noeviction');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
