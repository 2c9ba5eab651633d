// A Lua script run by its SHA: EVALSHA first (the server keeps scripts cached), EVAL once when the
// server answers NOSCRIPT (after a restart or SCRIPT FLUSH). Every atomic step in core uses it.
import { createHash } from 'node:crypto';
import type { Redis } from './redis-client.ts';

export class LuaScript {
  readonly sha: string;

  constructor(
    readonly source: string,
    readonly name = 'script',
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /**
   * Caches the script in the server ahead of use. A first EVALSHA answered NOSCRIPT after the
   * client's command timeout gave up on it is never followed by its EVAL: loaded ahead, a command
   * sent while Redis hangs (a release after a lost reply) runs when Redis resumes.
   */
  async load(redis: Redis): Promise<void> {
    await redis.script('LOAD', this.source);
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
