import { readFileSync } from 'node:fs';
import type { RateLimits } from '../../core/billing/index.ts';
import { invalidRequest } from '../../core/errors.ts';
import type { ApiKeyRecord } from '../../core/keys/index.ts';
import { maskSecret } from '../../core/keys/index.ts';
import { formatNano } from '../../core/money.ts';
import { amount, optional, positionals, required } from '../args.ts';
import { requireAccount } from '../context.ts';
import type { Command } from './types.ts';

const row = (k: ApiKeyRecord, monthSpend?: number) =>
  `${k.id}  ${k.name.padEnd(20)}  ${maskSecret(k.last4)}  ${k.createdAt.slice(0, 10)}  ${k.status}${k.format === 'legacy' ? ' (legacy)' : ''}${k.spendLimit === null ? '' : `  limit=${formatNano(k.spendLimit)}/month`}${monthSpend === undefined ? '' : `  spent this month=${formatNano(monthSpend)}`}`;

/** A key as --json prints it: money as decimal strings of the account currency, like balances. */
const view = (k: ApiKeyRecord) => ({
  ...k,
  spendLimit: k.spendLimit === null ? null : formatNano(k.spendLimit),
});

/** `<amount>` in the account currency, or `none` for no limit (null). */
const spendLimitArg = (value: string, what: string): number | null =>
  value === 'none' ? null : amount(value, what, { zero: true });

const RATE_FLAGS: readonly [string, keyof RateLimits][] = [
  ['rpm', 'requestsPerMinute'],
  ['itpm', 'inputTokensPerMinute'],
  ['otpm', 'outputTokensPerMinute'],
  ['concurrent', 'concurrentCalls'],
];

/** A secret given on the command line lands in shell history; read it from stdin instead. */
function readSecretFromStdin(): string {
  const raw = readFileSync(0, 'utf8');
  // Only the line terminator that `echo` adds is removed; any other whitespace is kept so the
  // key store rejects it, exactly as the API would.
  return raw.endsWith('\n') ? raw.slice(0, -1) : raw;
}

export const keyCommands: Command[] = [
  {
    name: 'keys create',
    writes: true,
    usage: 'keys create <accountId> --name <name> [--created-by <userId>] [--spend-limit <amount>]',
    summary:
      'create an API key, optionally with a monthly spend limit in the account currency; the secret is printed once',
    flags: { name: { type: 'string' }, 'created-by': { type: 'string' }, 'spend-limit': { type: 'string' } },
    prepare(p) {
      const [accountId] = positionals(p, 'accountId');
      const name = required(p, 'name');
      const createdBy = optional(p, 'created-by');
      const limitArg = optional(p, 'spend-limit');
      const spendLimit = limitArg === undefined ? null : spendLimitArg(limitArg, '--spend-limit');
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        const { key, secret } = await ctx.keys.create(accountId, {
          name,
          spendLimit,
          ...(createdBy ? { createdBy } : {}),
        });
        ctx.print(`${row(key)}\nsecret (shown once): ${secret}`, { ...view(key), secret });
      };
    },
  },
  {
    name: 'keys limit',
    writes: true,
    usage: 'keys limit <accountId> <keyId> <amount|none>',
    summary:
      "set a key's monthly spend limit in the account currency (this month's spend so far counts), or remove it with none",
    flags: {},
    prepare(p) {
      const [accountId, keyId, value] = positionals(p, 'accountId', 'keyId', 'amount|none');
      const spendLimit = spendLimitArg(value, '<amount|none>');
      return async (ctx) => {
        const key = await ctx.keys.setSpendLimit(accountId, keyId, spendLimit);
        const spent = (await ctx.keys.monthSpend(accountId, [keyId])).get(keyId) ?? 0;
        ctx.print(row(key, spent), { ...view(key), monthSpend: formatNano(spent) });
      };
    },
  },
  {
    name: 'keys rate-limits',
    writes: true,
    usage:
      'keys rate-limits <accountId> [keyId] [--rpm <n|none>] [--itpm <n|none>] [--otpm <n|none>] [--concurrent <n|none>]',
    summary:
      "set or unset (none) a key's rate limits (docs/limits.md), or without keyId the account's defaults for its keys; limits not named stay",
    flags: {
      rpm: { type: 'string' },
      itpm: { type: 'string' },
      otpm: { type: 'string' },
      concurrent: { type: 'string' },
    },
    prepare(p) {
      const [accountId, keyId] =
        p.positionals.length > 1 ? positionals(p, 'accountId', 'keyId') : positionals(p, 'accountId');
      const limits: Partial<RateLimits> = {};
      for (const [flag, name] of RATE_FLAGS) {
        const v = optional(p, flag);
        if (v === undefined) continue;
        if (v !== 'none' && !/^\d+$/.test(v))
          throw invalidRequest(`--${flag} must be a whole number or none`, flag);
        limits[name] = v === 'none' ? null : Number(v);
      }
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        if (keyId === undefined) {
          const account = await ctx.accounts.setRateLimits(accountId, limits);
          ctx.print(JSON.stringify(account.rateLimits), account.rateLimits);
          return;
        }
        const key = await ctx.keys.setRateLimits(accountId, keyId, limits);
        ctx.print(`${row(key)}  ${JSON.stringify(key.rateLimits)}`, view(key));
      };
    },
  },
  {
    name: 'keys list',
    writes: false,
    usage: 'keys list <accountId> [--all]',
    summary: "list keys (masked) with their spend limits and this month's spend; --all includes deleted keys",
    flags: { all: { type: 'boolean' } },
    prepare(p) {
      const [accountId] = positionals(p, 'accountId');
      const includeDeleted = p.flags.all === true;
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        const list = await ctx.keys.list(accountId, { includeDeleted });
        const spent = await ctx.keys.monthSpend(
          accountId,
          list.map((k) => k.id),
        );
        const spentOf = (k: ApiKeyRecord) => spent.get(k.id) ?? 0;
        ctx.print(
          list.map((k) => row(k, spentOf(k))).join('\n') || '(no keys)',
          list.map((k) => ({ ...view(k), monthSpend: formatNano(spentOf(k)) })),
        );
      };
    },
  },
  {
    name: 'keys show',
    writes: false,
    usage: 'keys show <accountId> <keyId>',
    summary: 'print the full secret of an active key',
    flags: {},
    prepare(p) {
      const [accountId, keyId] = positionals(p, 'accountId', 'keyId');
      return async (ctx) => {
        const secret = await ctx.keys.show(accountId, keyId);
        ctx.print(secret, { id: keyId, secret });
      };
    },
  },
  {
    name: 'keys rotate',
    writes: true,
    usage: 'keys rotate <accountId> <keyId>',
    summary: 'replace the secret (same id, name, history); the old secret stops working at once',
    flags: {},
    prepare(p) {
      const [accountId, keyId] = positionals(p, 'accountId', 'keyId');
      return async (ctx) => {
        const { key, secret } = await ctx.keys.rotate(accountId, keyId);
        ctx.print(`${row(key)}\nnew secret (shown once): ${secret}`, { ...view(key), secret });
      };
    },
  },
  {
    name: 'keys delete',
    writes: true,
    usage: 'keys delete <accountId> <keyId>',
    summary: 'delete a key (soft, final): it stops authenticating at once, its usage stays',
    flags: {},
    prepare(p) {
      const [accountId, keyId] = positionals(p, 'accountId', 'keyId');
      return async (ctx) => {
        await ctx.keys.delete(accountId, keyId);
        ctx.print(`deleted ${keyId}`, { id: keyId, status: 'deleted' });
      };
    },
  },
  {
    name: 'keys import',
    writes: true,
    usage: 'keys import <accountId> --name <name> < secret.txt',
    summary: 'import a key of an earlier format (secret read from stdin); it works until rotated',
    flags: { name: { type: 'string' }, 'created-by': { type: 'string' } },
    prepare(p) {
      const [accountId] = positionals(p, 'accountId');
      const name = required(p, 'name');
      const createdBy = optional(p, 'created-by');
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        const secret = readSecretFromStdin();
        const key = await ctx.keys.importLegacy(accountId, {
          name,
          secret,
          ...(createdBy ? { createdBy } : {}),
        });
        ctx.print(row(key), view(key));
      };
    },
  },
];
