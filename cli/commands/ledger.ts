// `ledger check` proves the money adds up (core/ledger/ledger.ts) and exits 1 naming every difference;
// `ledger show` prints one call's entries: its hold and settlement (one charge entry), a void of
// its hold, refunds of its charge.

import { isSilent, lostAcknowledged, replicaReports } from '../../core/billing/replica-reports.ts';
import { requestHistory } from '../../core/ledger/history.ts';
import { checkLedger, ledgerOfRequest } from '../../core/ledger/ledger.ts';
import { formatNano } from '../../core/money.ts';
import { epochFaults } from '../../core/redis/epoch.ts';
import type { UsageEntry } from '../../core/usage/usage.ts';
import { noExtraPositionals, optional, positional, UsageError } from '../args.ts';
import type { Command } from './types.ts';

/** The ledger does not add up: the message names every difference (exit code 1). */
export class LedgerMismatchError extends Error {
  override name = 'LedgerMismatchError';
}

export const ledgerCommands: Command[] = [
  {
    name: 'ledger check',
    writes: false,
    usage: 'ledger check [--account <accountId>] [--tolerance-ms <ms>]',
    summary:
      'balance = top-ups − charges + refunds (and, with DATABASE_URL, = the journal + entries not yet archived), held = open holds and leases, no stranded hold; exits 1 naming each difference',
    flags: { account: { type: 'string' }, 'tolerance-ms': { type: 'string' } },
    prepare(p) {
      noExtraPositionals(p, 0);
      const accountId = optional(p, 'account');
      const toleranceArg = optional(p, 'tolerance-ms');
      const tolerance = toleranceArg === undefined ? undefined : Number(toleranceArg);
      if (tolerance !== undefined && (!Number.isSafeInteger(tolerance) || tolerance < 0)) {
        throw new UsageError(`--tolerance-ms: '${toleranceArg}' must be a whole number of milliseconds`);
      }
      return async (ctx) => {
        // A hold may stand this long past its expiry before it counts as stranded: one sweep
        // interval and one hand-over of the sweeper lock.
        const toleranceMs = tolerance ?? ctx.config.HOLD_SWEEP_INTERVAL_MS + ctx.config.HOLD_SWEEPER_LOCK_MS;
        // With DATABASE_URL, Redis is checked against the durable journal too (core/ledger/ledger.ts).
        const journal = await ctx.journal();
        const ledgers = await checkLedger(ctx.redis, {
          toleranceMs,
          ...(journal ? { journal } : {}),
          ...(accountId === undefined ? {} : { accountId }),
        });
        const lines = ledgers.map(
          (l) =>
            `${l.accountId}  ${l.problems.length === 0 ? 'ok' : 'MISMATCH'}  balance=${formatNano(l.balance)} held=${formatNano(l.held)} holds=${l.holds.length} entries=${l.entries} voids=${l.voids} uncollected=${formatNano(l.uncollected)}`,
        );
        // Proxies that find this Redis is not the one they knew say so in it (core/redis/epoch.ts):
        // the accounts are gone, so no account's check could show it.
        const lost = (await epochFaults(ctx.redis)).map(
          (f) =>
            `replica ${f.replica}: this Redis is not the one it knew (epoch ${f.found ?? 'missing'}, expected ${f.expected}) — it lost its data; ${f.owed} settlements wait in that replica's journal. Restore Redis from its AOF/RDB.`,
        );
        for (const l of lost) lines.push(`LOST  ${l}`);
        // What each replica's journal still owes (core/billing/replica-reports.ts): in flight from a live
        // replica, lost for good from one whose volume is gone — a silent one is named with the amount.
        const now = Date.now();
        const silent: string[] = [];
        const reports = await replicaReports(ctx.redis);
        // Settlements Redis acknowledged and no longer has: a failover to a replica that had not
        // received them yet (replication is asynchronous). Redis alone stays self-consistent, so
        // only the replicas' witness can name them (core/billing/replica-reports.ts, AcknowledgedWrite).
        const forgotten = (await lostAcknowledged(ctx.redis, reports)).map(
          ({ replica, write: w }) =>
            `${w.accountId}: ${w.op} (${w.count} call${w.count === 1 ? '' : 's'}, cost ${formatNano(w.nano)}) was acknowledged to replica ${replica} at ${new Date(w.atMs).toISOString()} and Redis has no trace of it — lost in a failover (replication is asynchronous; REDIS_WAIT_REPLICAS=1 makes a settlement wait for a replica)`,
        );
        for (const l of forgotten) lines.push(`LOST  ${l}`);
        lost.push(...forgotten);
        const amountsOf = (byAccount: Record<string, { count: number; nano: number }>) =>
          Object.entries(byAccount)
            .map(([acct, o]) => `${acct} ${formatNano(o.nano)} (${o.count})`)
            .join(', ');
        for (const r of reports) {
          const unanswered = r.unanswered?.count ?? 0;
          // Calls a full journal disk holds unanswered until Redis has their charges (issue 47):
          // owed while the replica lives, nothing once it is gone (they were never delivered).
          const held =
            unanswered === 0
              ? ''
              : `${unanswered} settlements of calls not answered yet (the journal's disk is full; they wait for Redis): ${amountsOf(r.unanswered!.byAccount)}`;
          if (isSilent(r, now)) {
            if (r.owed === 0) continue;
            silent.push(
              `replica ${r.replica} has been silent for ${Math.round((now - r.reportedAtMs) / 1000)} s owing ${r.owed} settlements: ${amountsOf(r.byAccount)}. Start it again on its PROXY_DATA_DIR; if that volume is gone, these charges are lost.${unanswered === 0 ? '' : ` (${unanswered} more were of calls never answered: not owed.)`}`,
            );
          } else if (r.owed > 0 || unanswered > 0)
            lines.push(
              `OWED  replica ${r.replica}: ${[r.owed > 0 ? `${r.owed} settlements in flight: ${amountsOf(r.byAccount)}` : '', held].filter(Boolean).join('; ')}`,
            );
        }
        for (const l of silent) lines.push(`SILENT  ${l}`);
        lost.push(...silent);
        ctx.print(lines.join('\n') || '(no accounts)', ledgers);
        const problems = [...lost, ...ledgers.flatMap((l) => l.problems.map((p) => `${l.accountId}: ${p}`))];
        if (problems.length > 0) {
          throw new LedgerMismatchError(`the ledger does not add up:\n  ${problems.join('\n  ')}`);
        }
      };
    },
  },
  {
    name: 'ledger show',
    writes: false,
    usage: 'ledger show <requestId> [--account <accountId>]',
    summary: "one call's ledger entries: its hold and settlement, a void of its hold, refunds",
    flags: { account: { type: 'string' } },
    prepare(p) {
      const requestId = positional(p, 0, 'requestId');
      noExtraPositionals(p, 1);
      const accountId = optional(p, 'account');
      return async (ctx) => {
        // The journal keeps every call forever; Redis only what is not yet archived.
        const journal = await ctx.journal();
        const found = journal
          ? await requestHistory(ctx.redis, journal, requestId, accountId)
          : await ledgerOfRequest(ctx.redis, requestId, accountId);
        if (found.length === 0) throw new UsageError(`no ledger entry names '${requestId}'`);
        const human = found
          .map((f) => [`${requestId}  account ${f.accountId}`, ...f.entries.flatMap(describe)].join('\n'))
          .join('\n');
        ctx.print(human, found);
      };
    },
  },
];

/** The lines of one entry; a charge of a call shows its hold and its settlement. */
function describe(e: UsageEntry): string[] {
  const at = new Date(e.atMs).toISOString();
  const usage = [
    e.keyId && `key=${e.keyId}`,
    e.model && `model=${e.model}`,
    e.inputTokens !== null && `in=${e.inputTokens}`,
    e.cachedTokens !== null && `cached=${e.cachedTokens}`,
    e.outputTokens !== null && `out=${e.outputTokens}`,
    e.images !== null && `images=${e.images}`,
    e.videoSeconds !== null && `video_s=${e.videoSeconds}`,
  ]
    .filter(Boolean)
    .join(' ');
  switch (e.type) {
    case 'charge': {
      const lines: string[] = [];
      if (e.held !== null) {
        const from = { hold: 'reserved', lease: 'carved from a lease', none: 'voided before the settlement' };
        lines.push(
          `  hold    ${formatNano(e.held)}  ${from[e.source as keyof typeof from] ?? e.source ?? ''}`,
        );
      }
      const short = e.short > 0 ? `  short=${formatNano(e.short)} (not collected)` : '';
      lines.push(
        `  ${e.opId.startsWith('settle:') ? 'settle' : 'charge'}  ${formatNano(e.amount)} of cost ${formatNano(e.cost ?? e.amount)}${short}  ${usage}  balance=${formatNano(e.balance)}  ${at}  ${e.opId}`,
      );
      return lines;
    }
    case 'void':
      return [
        `  void    ${formatNano(e.amount)} given back (${e.reason})  balance=${formatNano(e.balance)}  ${at}`,
      ];
    case 'refund':
      return [
        `  refund  ${formatNano(e.amount)} of ${e.refundOf}  balance=${formatNano(e.balance)}  ${at}  ${e.opId}`,
      ];
    case 'topup':
      return [`  top-up  ${formatNano(e.amount)}  ${at}  ${e.opId}`];
  }
}
