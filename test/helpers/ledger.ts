// The end of every money test: the ledger check (core/ledger.ts, `modelplane ledger check`) finds
// nothing wrong — balance = top-ups − charges + refunds, held = the open holds and leases, no
// stranded hold, every hold in the sweeper's index.

import { expect } from 'vitest';
import { checkAccountLedger, checkLedger } from '../../core/ledger.ts';
import type { Redis } from '../../core/redis-client.ts';

/** Checks the given accounts (default: every account in Redis) and fails naming each difference. */
export async function expectLedgerClean(
  redis: Redis,
  accountIds?: readonly string[],
  toleranceMs = 5_000,
): Promise<void> {
  const ledgers =
    accountIds === undefined
      ? await checkLedger(redis, { toleranceMs })
      : await Promise.all(accountIds.map((id) => checkAccountLedger(redis, id, { toleranceMs })));
  expect(ledgers.flatMap((l) => l.problems.map((p) => `${l.accountId}: ${p}`))).toEqual([]);
}
