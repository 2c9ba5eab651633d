// The end of every money test: the ledger check (core/ledger/ledger.ts, `modelplane ledger check`) finds
// nothing wrong — balance = top-ups − charges + refunds, held = the open holds and leases, no
// stranded hold, every hold in the sweeper's index.

import { expect } from 'vitest';
import type { Journal } from '../../core/journal/index.ts';
import { checkAccountLedger, checkLedger } from '../../core/ledger/ledger.ts';
import type { Redis } from '../../core/redis/client.ts';

/** Checks the given accounts (default: every account in Redis) and fails naming each difference. */
export async function expectLedgerClean(
  redis: Redis,
  accountIds?: readonly string[],
  toleranceMs = 5_000,
  /** With the durable journal: Redis is checked against it too (balance = journal + not yet archived). */
  journal?: Journal,
): Promise<void> {
  const opts = journal ? { toleranceMs, journal } : { toleranceMs };
  const ledgers =
    accountIds === undefined
      ? await checkLedger(redis, opts)
      : await Promise.all(accountIds.map((id) => checkAccountLedger(redis, id, opts)));
  expect(ledgers.flatMap((l) => l.problems.map((p) => `${l.accountId}: ${p}`))).toEqual([]);
}
