import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { LuaScript } from './lua.ts';

describe('LuaScript', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => redis.stop());

  it('runs by SHA, and again after the server forgot its scripts', async () => {
    const r = redis.client();
    const incr = new LuaScript("return redis.call('INCRBY', KEYS[1], ARGV[1])", 'incr');
    expect(await incr.run(r, ['n'], [2])).toBe(2);
    await r.script('FLUSH');
    expect(await incr.run(r, ['n'], [3])).toBe(5);
    expect(await incr.run(r, ['n'], [1])).toBe(6);
  });

  it('passes script errors through', async () => {
    const bad = new LuaScript("return redis.call('NOSUCHCOMMAND')");
    await expect(bad.run(redis.client(), [], [])).rejects.toThrow(/Unknown Redis command|unknown command/i);
  });
});
