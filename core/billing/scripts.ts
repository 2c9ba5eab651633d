// The metering Lua scripts, read once from ./lua at import. Each script is common.lua (shared
// helpers) followed by the operation's own file, so every operation stays one atomic script.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

export class LuaScript {
  readonly sha: string;

  constructor(
    readonly name: string,
    readonly source: string,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /** EVALSHA, falling back to EVAL once when the server has not cached the script (a restart). */
  async run(redis: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

const read = (file: string) => readFileSync(new URL(`./lua/${file}`, import.meta.url), 'utf8');
const common = read('common.lua');
const load = (name: string) => new LuaScript(name, `${common}\n${read(`${name}.lua`)}`);

export const scripts = {
  reserve: load('reserve'),
  settle: load('settle'),
  release: load('release'),
  charge: load('charge'),
  refund: load('refund'),
  topUp: load('topup'),
  sweep: load('sweep'),
  extendLease: load('extend_lease'),
  settleBatch: load('settle_batch'),
  releaseLease: load('release_lease'),
} as const;
