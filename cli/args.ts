// Argument parsing shared by every command. A bad argument is a UsageError: the CLI prints the
// message and exits 2 before anything is written.
import { parseArgs } from 'node:util';
import { parseDecimalToNano } from '../core/money.ts';

export class UsageError extends Error {
  override name = 'UsageError';
}

export type Flags = Record<string, string | boolean | undefined>;

export interface Parsed {
  positionals: string[];
  flags: Flags;
}

export type FlagSpec = Record<string, { type: 'string' | 'boolean' }>;

export function parse(argv: string[], spec: FlagSpec): Parsed {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { json: { type: 'boolean' }, ...spec },
      allowPositionals: true,
      strict: true,
    });
    return { positionals, flags: values as Flags };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

export function positional(p: Parsed, index: number, name: string): string {
  const v = p.positionals[index];
  if (v === undefined || v === '') throw new UsageError(`missing <${name}>`);
  return v;
}

export function required(p: Parsed, flag: string): string {
  const v = p.flags[flag];
  if (typeof v !== 'string' || v === '') throw new UsageError(`missing --${flag}`);
  return v;
}

export function optional(p: Parsed, flag: string): string | undefined {
  const v = p.flags[flag];
  return typeof v === 'string' ? v : undefined;
}

/** "12.50" in currency units → nano-units; exact, positive. */
export function amount(value: string, what: string, o: { zero?: boolean } = {}): number {
  try {
    const nano = parseDecimalToNano(value);
    if (nano < 0 || (nano === 0 && !o.zero))
      throw new RangeError(o.zero ? 'must not be negative' : 'must be greater than 0');
    return nano;
  } catch (err) {
    throw new UsageError(`${what}: ${(err as Error).message}`);
  }
}

export function noExtraPositionals(p: Parsed, count: number): void {
  if (p.positionals.length > count) {
    throw new UsageError(`unexpected argument '${p.positionals[count]}'`);
  }
}

/** Exactly these positionals, in order, and no more. */
export function positionals<N extends string[]>(p: Parsed, ...names: N): { [K in keyof N]: string } {
  const values = names.map((name, i) => positional(p, i, name));
  noExtraPositionals(p, names.length);
  return values as { [K in keyof N]: string };
}
