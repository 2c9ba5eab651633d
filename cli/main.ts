// The admin command line: `npx modelplane <command> ... [--json]`. Exit codes: 0 done, 1 failed
// while running, 2 bad arguments (nothing was written).
import { isApiError } from '../core/errors.ts';
import { requireNoEviction } from '../core/redis/policy.ts';
import { parse, UsageError } from './args.ts';
import { accountCommands } from './commands/accounts.ts';
import { keyCommands } from './commands/keys.ts';
import { ledgerCommands } from './commands/ledger.ts';
import { modelCommands } from './commands/models.ts';
import { topUpCommands } from './commands/topups.ts';
import type { Command } from './commands/types.ts';
import { usageCommands } from './commands/usage.ts';
import { userCommands } from './commands/users.ts';
import { type Context, createContext } from './context.ts';

export const commands: Command[] = [
  ...accountCommands,
  ...keyCommands,
  ...modelCommands,
  ...userCommands,
  ...usageCommands,
  ...ledgerCommands,
  ...topUpCommands,
];

export function help(): string {
  const width = Math.max(...commands.map((c) => c.usage.length));
  return [
    'usage: modelplane <command> [--json]',
    '',
    ...commands.map((c) => `  ${c.usage.padEnd(width)}  ${c.summary}`),
    '',
    'Reads REDIS_URL and MODELPLANE_KEK from the environment, else from .data/dev.env (written by make dev).',
  ].join('\n');
}

/** Longest command name that prefixes argv wins ('accounts create' over a hypothetical 'accounts'). */
function find(argv: string[]): { command: Command; rest: string[] } | null {
  let best: { command: Command; rest: string[] } | null = null;
  for (const command of commands) {
    const words = command.name.split(' ');
    if (
      words.every((w, i) => argv[i] === w) &&
      (!best || words.length > best.command.name.split(' ').length)
    ) {
      best = { command, rest: argv.slice(words.length) };
    }
  }
  return best;
}

export async function main(
  argv: string[],
  io: { out: (s: string) => void; err: (s: string) => void } = { out: console.log, err: console.error },
  makeContext: (json: boolean, out: (s: string) => void) => Context = createContext,
): Promise<number> {
  if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    io.out(help());
    return argv.length === 0 ? 2 : 0;
  }
  const found = find(argv);
  if (!found) {
    io.err(`modelplane: unknown command '${argv.slice(0, 2).join(' ')}'\n\n${help()}`);
    return 2;
  }
  let ctx: Context | undefined;
  try {
    const parsed = parse(found.rest, found.command.flags);
    const run = found.command.prepare(parsed);
    ctx = makeContext(parsed.flags.json === true, io.out);
    if (found.command.writes) await requireNoEviction(ctx.redis, `modelplane ${found.command.name}`);
    await run(ctx);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`modelplane ${found.command.name}: ${err.message}\nusage: modelplane ${found.command.usage}`);
      return 2;
    }
    if (isApiError(err) && err.status < 500) {
      // Domain validation (a duplicate key name, an unknown key id) is the caller's mistake too.
      io.err(`modelplane ${found.command.name}: ${err.message}`);
      return 2;
    }
    io.err(`modelplane ${found.command.name}: ${(err as Error).message}`);
    return 1;
  } finally {
    await ctx?.close();
  }
}
