import type { FlagSpec, Parsed } from '../args.ts';
import type { Context } from '../context.ts';

export interface Command {
  /** e.g. 'accounts create' */
  name: string;
  /**
   * Writes to Redis (accounts, keys, credits, top-ups, team): refused on a Redis that may evict
   * keys (core/redis/policy.ts), as every long-running part is. Reads still run there, so an
   * operator can look at what an evicting Redis holds.
   */
  writes: boolean;
  usage: string;
  summary: string;
  flags: FlagSpec;
  /** Checks every argument before anything is written; returns the action to run. */
  prepare(p: Parsed): (ctx: Context) => Promise<void>;
}
