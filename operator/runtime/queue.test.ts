import { describe, expect, it } from 'vitest';
import { KeyedQueue } from './queue.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('KeyedQueue', () => {
  it('runs one key one at a time and coalesces enqueues made while it runs', async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    // Each run waits until the test lets it finish, so the enqueues below land while one runs.
    let finish: () => void = () => {};
    const q = new KeyedQueue(async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      runs++;
      await new Promise<void>((r) => {
        finish = r;
      });
      running--;
    });
    q.add('a');
    while (running === 0) await sleep(1);
    for (let i = 0; i < 5; i++) q.add('a');
    finish();
    while (runs < 2) await sleep(1);
    finish();
    await q.idle();
    expect(maxRunning).toBe(1);
    expect(runs).toBe(2);
  });

  it('runs different keys concurrently', async () => {
    let running = 0;
    let maxRunning = 0;
    const q = new KeyedQueue(async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await sleep(20);
      running--;
    });
    for (const k of ['a', 'b', 'c']) q.add(k);
    await q.idle();
    expect(maxRunning).toBe(3);
  });

  it('retries a failing key with growing backoff until it succeeds', async () => {
    const times: number[] = [];
    const errors: number[] = [];
    const q = new KeyedQueue(
      async () => {
        times.push(Date.now());
        if (times.length < 4) throw new Error('boom');
      },
      { baseDelayMs: 20, onError: (_k, _e, attempt) => errors.push(attempt) },
    );
    q.add('a');
    await q.idle();
    expect(errors).toEqual([1, 2, 3]);
    expect(times).toHaveLength(4);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(gaps[2]!).toBeGreaterThan(gaps[0]!);
  });
});
