// A batch's money (docs/batches.md "Billing"), asked of the replica's one Billing as every call's is
// (`billing.batches`): the batches (../batches/) hold, keep, bill and give back through it and
// never meter themselves. The batch's hold is a lease of its own (core/billing/leases.ts) every
// line is billed from:
// - hold: the sum of the lines' estimates, all of it or none (429), the account's credit and the
//   key's spend limit both; money the replicas' credit leases sit on is given back first;
// - keep: renewed every runner tick while the batch is open; a lease whose runners all died lapses;
// - settleLine: one written line billed once, under its own id (batch id + line index), so a
//   runner that retries it after a crash charges nothing more;
// - release: the unused hold back (the batch finalized, or never created whole);
// - openLine: a line call's charge (./batch-line-charge.ts), covered by the batch's hold.
import { LeaseMetering, type UsageRecord } from '../../core/billing/index.ts';
import { ApiError, insufficientQuota, keySpendLimitReached } from '../../core/errors.ts';
import type { Redis } from '../../core/redis/client.ts';
import type { Principal } from '../auth/key-cache.ts';
import type { CallUsage } from '../usage.ts';
import { BatchLineCharge, type LineTicket } from './batch-line-charge.ts';
import type { CallInfo, Quote } from './charge-types.ts';
import type { LeaseReclaim } from './lease-reclaim.ts';

/** The batch's hold: a lease (core/billing/leases.ts) every line is billed from. */
export const batchLeaseId = (batchId: string) => `batch:${batchId}`;

/** Renewed every runner tick while the batch is open; a lease whose runners all died lapses after it. */
export const BATCH_LEASE_TTL_MS = 3_600_000;

/** A line's settlement is remembered past the 24 h window and its finalizing. */
const SETTLE_DONE_TTL_MS = 3 * 24 * 3_600_000;

export interface BatchMoneyDeps {
  redis: Redis;
  /** The lease reclaim between replicas (null without credit leases). */
  reclaim: LeaseReclaim | null;
  /** A line's charge landed (the credits metric). */
  charged(model: string, currency: string, amount: number): void;
}

/** One billed line: what its result used and cost at the batch price, and whose batch it is. */
export interface BatchLineBill {
  accountId: string;
  batchId: string;
  index: number;
  cost: number;
  usage: CallUsage;
  keyId: string | null;
  model: string;
  kind: UsageRecord['kind'];
  currency: string;
}

export class BatchMoney {
  private readonly leases: LeaseMetering;

  constructor(private readonly d: BatchMoneyDeps) {
    this.leases = new LeaseMetering(d.redis, { settleDoneTtlMs: SETTLE_DONE_TTL_MS });
  }

  /**
   * Holds the whole estimate, or nothing (429). The hold is the key's too: a key with a spend limit
   * must have the whole estimate left in its window's period (less what its calls and other batches
   * hold), refused as an interactive call is (limit_source `key`), and the lines' charges count in
   * its window as they are billed. The account's budget across its keys is held to the same way
   * (limit_source `account`): the estimate is held against it while the batch runs.
   */
  async hold(p: Principal, batchId: string, estimate: number): Promise<void> {
    if (estimate === 0) return;
    if (!Number.isSafeInteger(estimate))
      throw new ApiError('invalid_request', 'The batch is too large to be paid for.');
    const leaseId = batchLeaseId(batchId);
    const grow = () =>
      this.leases.extendLease({
        accountId: p.accountId,
        leaseId,
        add: estimate,
        min: estimate,
        den: 1,
        ttlMs: BATCH_LEASE_TTL_MS,
        keyId: p.keyId,
      });
    let r = await grow();
    // The replicas' credit leases may sit on money the balance has: they give it back first (as for
    // an interactive call near its limit, ./charge.ts), so a lease never refuses a batch the
    // balance covers. Leases hold the account's money, not the key's: a key's limit is final.
    const { reclaim } = this.d;
    if (r.grown < estimate && r.keyLimit === null && reclaim !== null) {
      await reclaim.reclaim(p.accountId);
      r = await grow();
    }
    if (r.grown < estimate) {
      await this.release(p.accountId, batchId);
      throw r.keyLimit === null ? insufficientQuota() : keySpendLimitReached(r.keyLimit, p.currency ?? null);
    }
  }

  /** The batch's hold lives while the batch does. */
  async keep(accountId: string, batchId: string): Promise<void> {
    await this.leases.extendLease({
      accountId,
      leaseId: batchLeaseId(batchId),
      add: 0,
      den: 1,
      ttlMs: BATCH_LEASE_TTL_MS,
    });
  }

  /** Gives the batch's unused hold back. */
  async release(accountId: string, batchId: string): Promise<void> {
    await this.leases.releaseLease({ accountId, leaseId: batchLeaseId(batchId) });
  }

  /**
   * Bills one line, once: a settlement of the batch's lease under the line's own id, with the usage
   * record's request id naming the batch and line. A line that cost nothing is not settled.
   */
  async settleLine(l: BatchLineBill): Promise<void> {
    if (l.cost <= 0) return;
    const ref = `${l.batchId}:${l.index}`;
    const r = await this.leases.settleBatch({
      accountId: l.accountId,
      leaseId: batchLeaseId(l.batchId),
      batchId: `line:${l.index}`,
      ttlMs: BATCH_LEASE_TTL_MS,
      records: [
        {
          holdId: ref,
          cost: l.cost,
          carved: l.cost,
          usage: {
            keyId: l.keyId,
            model: l.model,
            kind: l.kind,
            inputTokens: l.usage.inputTokens ?? 0,
            cachedTokens: l.usage.cachedTokens ?? 0,
            outputTokens: l.usage.outputTokens ?? 0,
            requestId: ref,
          },
        },
      ],
    });
    if (!r.duplicate) this.d.charged(l.model, l.currency, r.charged[0] ?? 0);
  }

  /** A batch line call's charge: covered by the batch's hold, its usage handed back on the ticket. */
  openLine(call: CallInfo, quote: Quote, ticket: LineTicket): BatchLineCharge {
    return new BatchLineCharge(call, quote, ticket);
  }
}
