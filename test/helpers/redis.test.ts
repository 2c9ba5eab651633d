import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from './redis.ts';

describe('test redis harness', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => redis.stop());

  it('starts a real, empty redis-server on its own port', async () => {
    const c = redis.client();
    expect(await c.dbsize()).toBe(0);
    await c.set('x', '1');
    expect(await c.get('x')).toBe('1');
    expect(await c.config('GET', 'appendonly')).toEqual(['appendonly', 'no']);
  });
});
