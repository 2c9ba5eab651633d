import { formatNano } from '../../core/money.ts';
import { usageReport } from '../../core/usage.ts';
import { optional, positionals, UsageError } from '../args.ts';
import { requireAccount } from '../context.ts';
import type { Command } from './types.ts';

const HOUR = 3_600_000;

export const usageCommands: Command[] = [
  {
    name: 'usage',
    usage: 'usage <accountId> [--key <keyId>] [--hours <n>]',
    summary: 'usage per hour, key and model over the last n hours (default 24); exact, no lag',
    flags: { key: { type: 'string' }, hours: { type: 'string' } },
    prepare(p) {
      const [accountId] = positionals(p, 'accountId');
      const keyId = optional(p, 'key');
      const hoursArg = optional(p, 'hours') ?? '24';
      const hours = Number(hoursArg);
      if (!Number.isInteger(hours) || hours < 1 || hours > 24 * 400) {
        throw new UsageError(`--hours: '${hoursArg}' must be a whole number of hours from 1 to 9600`);
      }
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        const toMs = Date.now();
        const rows = await usageReport(ctx.redis, {
          accountId,
          fromMs: toMs - hours * HOUR,
          toMs,
          ...(keyId ? { keyId } : {}),
        });
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
