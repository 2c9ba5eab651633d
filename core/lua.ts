// A Lua script run by its SHA: EVALSHA first (the server keeps scripts cached), EVAL once when the
// server answers NOSCRIPT (after a restart or SCRIPT FLUSH). Every atomic step in core uses it.
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

export class LuaScript {
  readonly sha: string;

  constructor(
    readonly source: string,
    readonly name = 'script',
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}
