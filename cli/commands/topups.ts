// Top-ups by operator approval (issue "Console" item 5): an account asks on the billing page, an
// operator settles the money however they do and approves here, which credits the request once
// (Metering.topUp keyed by the request id: an approve re-run credits nothing more). Reject
// credits nothing.
import { userInfo } from 'node:os';
import { formatNano } from '../../core/money.ts';
import { approveTopUp, rejectTopUp, type TopUpRequest, TopUpRequests } from '../../core/payments/index.ts';
import { noExtraPositionals, optional, positionals, UsageError } from '../args.ts';
import { requireAccount } from '../context.ts';
import type { Command } from './types.ts';

const line = (r: TopUpRequest) =>
  [
    r.id,
    r.accountId,
    `${formatNano(r.amount)} ${r.currency}`,
    r.provider,
    r.status,
    r.createdAt,
    r.decidedBy === null ? '' : `by ${r.decidedBy}`,
  ]
    .filter(Boolean)
    .join('  ');

const json = (r: TopUpRequest) => ({ ...r, amount: formatNano(r.amount) });

/** Who decided, as the request records it: --by, else the operator's login. */
function decider(by: string | undefined): string {
  if (by !== undefined) return by;
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli';
  }
}

export const topUpCommands: Command[] = [
  {
    name: 'topups list',
    writes: false,
    usage: 'topups list [--account <accountId>] [--all]',
    summary: 'top-up requests waiting for approval (oldest first); --all with --account: every request of it',
    flags: { account: { type: 'string' }, all: { type: 'boolean' } },
    prepare(p) {
      noExtraPositionals(p, 0);
      const accountId = optional(p, 'account');
      const all = p.flags.all === true;
      if (all && accountId === undefined)
        throw new UsageError('--all lists one account: add --account <accountId>');
      return async (ctx) => {
        if (accountId !== undefined) await requireAccount(ctx, accountId);
        const requests = new TopUpRequests(ctx.redis);
        const list =
          all && accountId !== undefined ? await requests.list(accountId) : await requests.pending(accountId);
        ctx.print(list.map(line).join('\n') || '(no top-up requests waiting)', list.map(json));
      };
    },
  },
  {
    name: 'topups approve',
    writes: true,
    usage: 'topups approve <requestId> [--by <name>]',
    summary: 'approve a top-up request and credit it (once, however often this is run)',
    flags: { by: { type: 'string' } },
    prepare(p) {
      const [id] = positionals(p, 'requestId');
      const by = decider(optional(p, 'by'));
      return async (ctx) => {
        const d = await approveTopUp(
          { requests: new TopUpRequests(ctx.redis), metering: ctx.metering },
          id,
          by,
        );
        const balance = await ctx.metering.balance(d.request.accountId);
        ctx.print(
          `${d.changed ? 'credited' : 'already credited; nothing was credited now'}\n${line(d.request)}  balance=${formatNano(balance.balance)}`,
          { ...json(d.request), changed: d.changed, balance: formatNano(balance.balance) },
        );
      };
    },
  },
  {
    name: 'topups reject',
    writes: true,
    usage: 'topups reject <requestId> [--by <name>]',
    summary: 'reject a top-up request: nothing is credited',
    flags: { by: { type: 'string' } },
    prepare(p) {
      const [id] = positionals(p, 'requestId');
      const by = decider(optional(p, 'by'));
      return async (ctx) => {
        const d = await rejectTopUp({ requests: new TopUpRequests(ctx.redis) }, id, by);
        ctx.print(`${d.changed ? 'rejected' : 'already rejected'}\n${line(d.request)}`, {
          ...json(d.request),
          changed: d.changed,
        });
      };
    },
  },
];
