// Every part refuses an evicting Redis at start (core/redis-policy.ts), saying why; the test
// servers and `make dev` run noeviction.
import { describe, expect, it } from 'vitest';
import { redisForFile } from '../test/helpers/redis-per-file.ts';
import { requireNoEviction } from './redis-policy.ts';

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
    const { spawn } = await import('node:child_process');
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
        const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], {
          env: {
            ...process.env,
            REDIS_URL: r.server.url,
            MODELPLANE_KEK: randomBytes(32).toString('hex'),
            PROXY_PORT: '0',
            PROXY_METRICS_PORT: '0',
            CONSOLE_PORT: '0',
            PROXY_DATA_DIR: `${r.server.dir}/proxy`,
            MEDIA_DIR: `${r.server.dir}/media`,
          },
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
        expect(code, `${part} said: ${said}`).not.toBe(0);
        expect(said).toContain(`${part} refuses this Redis: its maxmemory-policy is allkeys-lru`);
      }
    } finally {
      await r.redis.config('SET', 'maxmemory-policy', 'noeviction');
    }
  }, 120_000);
});
