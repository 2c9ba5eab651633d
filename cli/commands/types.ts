import type { FlagSpec, Parsed } from '../args.ts';
import type { Context } from '../context.ts';

export interface Command {
  /** e.g. 'accounts create' */
  name: string;
  usage: string;
  summary: string;
  flags: FlagSpec;
  /** Checks every argument before anything is written; returns the action to run. */
  prepare(p: Parsed): (ctx: Context) => Promise<void>;
}
