import { readFileSync } from 'node:fs';
import {
  ACCOUNT_SPEND_KEY,
  BUDGET_WINDOWS,
  type BudgetWindow,
  isBudgetWindow,
  type RateLimits,
} from '../../core/billing/index.ts';
import { invalidRequest } from '../../core/errors.ts';
import type { ApiKeyRecord } from '../../core/keys/index.ts';
import { maskSecret } from '../../core/keys/index.ts';
import { formatNano } from '../../core/money.ts';
import { amount, optional, positionals, required } from '../args.ts';
import { requireAccount } from '../context.ts';
import type { Command } from './types.ts';

const PERIOD_WORDS = { day: 'today', week: 'this week', month: 'this month' } as const;

const row = (k: ApiKeyRecord, windowSpend?: number) =>
  `${k.id}  ${k.name.padEnd(20)}  ${maskSecret(k.last4)}  ${k.createdAt.slice(0, 10)}  ${k.status}${k.format === 'legacy' ? ' (legacy)' : ''}${k.spendLimit === null ? '' : `  limit=${formatNano(k.spendLimit)}/${k.spendWindow}`}${windowSpend === undefined ? '' : `  spent ${PERIOD_WORDS[k.spendWindow]}=${formatNano(windowSpend)}`}`;

/** A key as --json prints it: money as decimal strings of the account currency, like balances. */
const view = (k: ApiKeyRecord) => ({
  ...k,
  spendLimit: k.spendLimit === null ? null : formatNano(k.spendLimit),
});

/** --window: the spend limit's window (UTC day, ISO week, UTC month), or undefined to keep it. */
function windowArg(value: string | undefined): BudgetWindow | undefined {
  if (value === undefined) return undefined;
  if (!isBudgetWindow(value))
    throw invalidRequest(`--window must be one of ${BUDGET_WINDOWS.join(', ')}`, 'window');
  return value;
}

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
    usage:
      'keys create <accountId> --name <name> [--created-by <userId>] [--spend-limit <amount>] [--window day|week|month]',
    summary:
      'create an API key, optionally with a spend limit in the account currency per UTC month (or --window day or week); the secret is printed once',
    flags: {
      name: { type: 'string' },
      'created-by': { type: 'string' },
      'spend-limit': { type: 'string' },
      window: { type: 'string' },
    },
    prepare(p) {
      const [accountId] = positionals(p, 'accountId');
      const name = required(p, 'name');
      const createdBy = optional(p, 'created-by');
      const limitArg = optional(p, 'spend-limit');
      const spendLimit = limitArg === undefined ? null : spendLimitArg(limitArg, '--spend-limit');
      const spendWindow = windowArg(optional(p, 'window'));
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        const { key, secret } = await ctx.keys.create(accountId, {
          name,
          spendLimit,
          ...(spendWindow ? { spendWindow } : {}),
          ...(createdBy ? { createdBy } : {}),
        });
        ctx.print(`${row(key)}\nsecret (shown once): ${secret}`, { ...view(key), secret });
      };
    },
  },
  {
    name: 'keys limit',
    writes: true,
    usage: 'keys limit <accountId> <keyId> <amount|none> [--window day|week|month]',
    summary:
      "set a key's spend limit in the account currency per its window (UTC day, ISO week or UTC month; the window's spend so far counts; --window changes it, else it stays), or remove it with none",
    flags: { window: { type: 'string' } },
    prepare(p) {
      const [accountId, keyId, value] = positionals(p, 'accountId', 'keyId', 'amount|none');
      const spendLimit = spendLimitArg(value, '<amount|none>');
      const spendWindow = windowArg(optional(p, 'window'));
      return async (ctx) => {
        const key = await ctx.keys.setSpendLimit(accountId, keyId, spendLimit, spendWindow);
        const spent = (await ctx.keys.windowSpend(accountId, [key])).get(keyId) ?? 0;
        ctx.print(row(key, spent), {
          ...view(key),
          monthSpend: formatNano((await ctx.keys.monthSpend(accountId, [keyId])).get(keyId) ?? 0),
          windowSpend: formatNano(spent),
        });
      };
    },
  },
  {
    name: 'keys budget',
    writes: true,
    usage: 'keys budget <accountId> <amount|none> [--window day|week|month]',
    summary:
      "set the account's budget across all its keys in the account currency per its window (UTC day, ISO week or UTC month; the period's spend so far counts; --window changes it, else it stays), or remove it with none",
    flags: { window: { type: 'string' } },
    prepare(p) {
      const [accountId, value] = positionals(p, 'accountId', 'amount|none');
      const limit = spendLimitArg(value, '<amount|none>');
      const window = windowArg(optional(p, 'window'));
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        const { budget } = await ctx.accounts.setBudget(accountId, limit, window);
        const spendWindow = budget?.window ?? 'month';
        const spent = (await ctx.keys.windowSpend(accountId, [{ id: ACCOUNT_SPEND_KEY, spendWindow }])).get(
          ACCOUNT_SPEND_KEY,
        );
        const out = {
          budget: budget === null ? null : formatNano(budget.limit),
          window: budget?.window ?? null,
          windowSpend: formatNano(spent ?? 0),
        };
        ctx.print(
          budget === null
            ? 'no budget'
            : `budget=${out.budget}/${budget.window}  spent ${PERIOD_WORDS[budget.window]}=${out.windowSpend}`,
          out,
        );
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
    name: 'keys concurrency-queue',
    writes: true,
    usage: 'keys concurrency-queue <accountId> <seconds|none>',
    summary:
      "let the account's calls over a key's calls-at-once limit wait up to <seconds> (1-60) in the proxy for a slot instead of a 429 (docs/limits.md), or refuse them at once again with none",
    flags: {},
    prepare(p) {
      const [accountId, value] = positionals(p, 'accountId', 'seconds|none');
      if (value !== 'none' && !/^\d+$/.test(value))
        throw invalidRequest('<seconds|none> must be a whole number of seconds or none', 'seconds');
      const seconds = value === 'none' ? null : Number(value);
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        const account = await ctx.accounts.setConcurrencyQueue(accountId, seconds);
        const out = { concurrencyQueueSeconds: account.concurrencyQueueSeconds };
        ctx.print(
          out.concurrencyQueueSeconds === null
            ? 'calls over a calls-at-once limit are refused at once'
            : `calls over a calls-at-once limit wait up to ${out.concurrencyQueueSeconds} s for a slot`,
          out,
        );
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
