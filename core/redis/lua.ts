// A Lua script run by its SHA: EVALSHA first (the server keeps scripts cached), EVAL once when the
// server answers NOSCRIPT (after a restart or SCRIPT FLUSH). Every atomic step in core uses it.
import { createHash } from 'node:crypto';
import { isCluster, type Redis } from './client.ts';

/** Redirections followed here at most per run (a slot moves once per failover or reshard). */
const MOVED_RETRIES = 3;

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

  /**
   * Runs the script. On Redis Cluster, a node that no longer owns the keys' slot answers MOVED and
   * runs nothing; ioredis follows that itself, except in an auto-pipelined batch that mixes slots
   * with a write, where it hands the raw MOVED back and keeps its old slot map (ioredis#2075: a
   * failover or a reshard then fails every script sent there until its next periodic refresh). So
   * a MOVED reply refreshes the map and the script is sent again: safe, since it did not run.
   */
  async run(redis: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    for (let moved = 0; ; moved++) {
      try {
        return await this.runOnce(redis, keys, args);
      } catch (err) {
        if (!isCluster(redis) || moved >= MOVED_RETRIES || !isMoved(err)) throw err;
        await new Promise<void>((resolve) => redis.refreshSlotsCache(() => resolve()));
      }
    }
  }

  private async runOnce(redis: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

const isMoved = (err: unknown) => err instanceof Error && err.message.startsWith('MOVED ');
