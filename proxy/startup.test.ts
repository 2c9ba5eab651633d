// The start-up's retry of its first Redis steps alone (./startup.ts): a Redis-unavailable failure is
// retried with a bounded back-off until the step passes or the retry time is over; anything else
// fails at once; the error names the step, its cause and the setting to raise.
import { describe, expect, it } from 'vitest';
import { startupBackoffMs, startupStep } from './startup.ts';

const t = { commandTimeoutMs: 300, retryMs: 2_000 };

describe('the start-up steps', () => {
  it('the back-off doubles from 250 ms and stays at 5 s', () => {
    expect([1, 2, 3, 4, 5, 6, 10].map(startupBackoffMs)).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000]);
  });

  it('a timed-out step is retried until it passes, each retry heard', async () => {
    let calls = 0;
    const heard: string[] = [];
    const got = await startupStep(
      'reading the catalogue',
      async () => {
        if (++calls < 3) throw new Error('Command timed out');
        return 'ok';
      },
      t,
      (m, ms) => heard.push(`${m} / ${ms}`),
    );
    expect(got).toBe('ok');
    expect(heard).toEqual([
      'the proxy\'s start-up step "reading the catalogue" failed: Command timed out (Redis did not answer one command within REDIS_COMMAND_TIMEOUT_MS (300 ms); raise it where Redis or this machine is slow) / 250',
      'the proxy\'s start-up step "reading the catalogue" failed: Command timed out (Redis did not answer one command within REDIS_COMMAND_TIMEOUT_MS (300 ms); raise it where Redis or this machine is slow) / 500',
    ]);
  });

  it('gives up once the retry time is over, and never retries what Redis being back cannot mend', async () => {
    const started = performance.now();
    await expect(
      startupStep(
        'checking Redis',
        () => Promise.reject(new Error('Command timed out')),
        { ...t, retryMs: 600 },
        () => {},
      ),
    ).rejects.toThrow(
      /"checking Redis" failed: Command timed out .*tried 2 times over PROXY_STARTUP_REDIS_RETRY_MS \(600 ms\)/,
    );
    expect(performance.now() - started).toBeLessThan(600);
    let calls = 0;
    await expect(
      startupStep(
        'checking Redis',
        async () => {
          calls++;
          throw new Error('the proxy refuses this Redis: its maxmemory-policy is allkeys-lru');
        },
        t,
        () => {},
      ),
    ).rejects.toThrow(/maxmemory-policy/);
    expect(calls).toBe(1);
  });
});
