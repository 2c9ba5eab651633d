import { callPage } from '../../core/journal/call-pages.ts';
import { formatNano } from '../../core/money.ts';
import { usageReport } from '../../core/usage/usage.ts';
import { optional, positionals, UsageError } from '../args.ts';
import { requireAccount } from '../context.ts';
import type { Command } from './types.ts';

const HOUR = 3_600_000;

export const usageCommands: Command[] = [
  {
    name: 'usage',
    writes: false,
    usage: 'usage <accountId> [--key <keyId>] [--hours <n>] [--calls | --days]',
    summary:
      'usage per hour, key and model over the last n hours (default 24; exact, no lag); with DATABASE_URL, --calls lists each call (newest first, the latest 1000; not yet archived ones too) and --days sums per day, from the journal (forever, deleted keys included)',
    flags: {
      key: { type: 'string' },
      hours: { type: 'string' },
      calls: { type: 'boolean' },
      days: { type: 'boolean' },
    },
    prepare(p) {
      const [accountId] = positionals(p, 'accountId');
      const keyId = optional(p, 'key');
      const hoursArg = optional(p, 'hours') ?? '24';
      const hours = Number(hoursArg);
      if (!Number.isInteger(hours) || hours < 1 || hours > 24 * 4000) {
        throw new UsageError(`--hours: '${hoursArg}' must be a whole number of hours from 1 to 96000`);
      }
      const view = p.flags.calls === true ? 'calls' : p.flags.days === true ? 'days' : 'hours';
      if (p.flags.calls === true && p.flags.days === true)
        throw new UsageError('--calls and --days: pick one');
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        const toMs = Date.now();
        const range = { fromMs: toMs - hours * HOUR, toMs, ...(keyId ? { keyId } : {}) };
        if (view !== 'hours') {
          const journal = await ctx.journal();
          if (!journal) throw new UsageError(`--${view} reads the durable journal: set DATABASE_URL`);
          if (view === 'calls') {
            // The same page the console shows: the journal and what is not archived yet.
            const { entries: calls } = await callPage(ctx.redis, journal, {
              accountId,
              ...range,
              limit: 1000,
            });
            const human = calls
              .map(
                (c) =>
                  `${new Date(c.atMs).toISOString()}  ${c.type}  ${c.requestId ?? c.opId}  ${c.keyId ?? '-'}  ${c.model ?? ''}  in=${c.inputTokens ?? 0} cached=${c.cachedTokens ?? 0} out=${c.outputTokens ?? 0} images=${c.images ?? 0} video_s=${c.videoSeconds ?? 0} cost=${formatNano(c.cost ?? c.amount)} charged=${formatNano(c.amount)}`,
              )
              .join('\n');
            ctx.print(human || '(no calls)', calls);
            return;
          }
          const days = await journal.daily(accountId, range);
          const human = days
            .map(
              (d) =>
                `${d.day}  ${d.keyId ?? '-'}  ${d.model}  requests=${d.requests} in=${d.inputTokens} cached=${d.cachedTokens} out=${d.outputTokens} images=${d.images} video_s=${d.videoSeconds} charged=${formatNano(d.charged)} refunded=${formatNano(d.refunded)}`,
            )
            .join('\n');
          ctx.print(human || '(no usage)', days);
          return;
        }
        const rows = await usageReport(ctx.redis, { accountId, ...range });
        const human = rows
          .map(
            (r) =>
              `${r.hour}  ${r.keyId}  ${r.model}  requests=${r.requests} in=${r.inputTokens} cached=${r.cachedTokens} out=${r.outputTokens} images=${r.images} video_s=${r.videoSeconds} cost=${formatNano(r.cost)}`,
          )
          .join('\n');
        ctx.print(human || '(no usage)', rows);
      };
    },
  },
];
