// A batch's creation, for both APIs (docs/batches.md): its lines read and checked (./input.ts); a
// bad line fails the batch at once with the lines' errors and nothing held or charged; otherwise
// the sum of the lines' estimates at the batch price is held against the account's credit and the
// key's spend limit — all of it or none, 429 insufficient_quota, so a batch can never overdraw nor
// pass its key's budget; money the replicas' credit leases sit on is given back first, so a lease
// never refuses a batch the balance covers — the lines copied beside the
// input (which may be deleted meanwhile), and the batch filed for the runner.

import type { Batches } from '../../core/batches.ts';
import { batchTokenPrice, type LeaseMetering } from '../../core/billing/index.ts';
import { ApiError, insufficientQuota, keySpendLimitReached } from '../../core/errors.ts';
import type { RecordFields } from '../../core/listed-records.ts';
import type { Principal } from '../auth/key-cache.ts';
import { tokenModel } from '../calls/resolve-model.ts';
import type { ProxyContext } from '../context.ts';
import type { BatchEndpoint, InputOptions, ReadInput } from './input.ts';
import { BATCH_LEASE_TTL_MS, batchLeaseId, linesKey, type StoredLine } from './keys.ts';

export interface CreateDeps {
  ctx: ProxyContext;
  batches: Batches;
  leases: LeaseMetering;
}

/** What reading a batch's lines needs: the account's models at the batch price. */
export function inputOptions(ctx: ProxyContext, p: Principal, endpoint: BatchEndpoint): InputOptions {
  return {
    endpoint,
    maxLines: ctx.config.BATCH_MAX_LINES,
    defaultMaxTokens: ctx.config.PROXY_DEFAULT_MAX_TOKENS,
    resolve: (model, kind) => {
      const { entry, price } = tokenModel(ctx.catalogue, p, model, kind);
      return { entry, price: batchTokenPrice(price, entry.batchDiscountPercent), routePrice: price };
    },
  };
}

export async function createBatch(
  d: CreateDeps,
  p: Principal,
  b: {
    id: string;
    endpoint: BatchEndpoint;
    inputFileId: string;
    metadata: Record<string, string> | null;
    read: ReadInput;
  },
): Promise<RecordFields> {
  const { ctx, batches } = d;
  const now = Math.floor(Date.now() / 1000);
  const fields: Record<string, string | number> = {
    id: b.id,
    endpoint: b.endpoint,
    input_file_id: b.inputFileId,
    completion_window: '24h',
    created_at: now,
    expires_at: now + Math.ceil(ctx.config.BATCH_WINDOW_MS / 1000),
    total: b.read.lines.length,
    completed: 0,
    failed: 0,
    charged: 0,
    estimate: b.read.estimate,
    model: b.read.model ?? '',
    key_id: p.keyId,
    currency: p.currency ?? '',
    ...(b.metadata ? { metadata: JSON.stringify(b.metadata) } : {}),
  };
  if (b.read.errors.length > 0 || b.read.lines.length === 0) {
    const errors =
      b.read.errors.length > 0
        ? b.read.errors
        : [{ code: 'empty_file', message: 'The input has no requests.', param: null, line: null }];
    await batches.create(p.accountId, b.id, {
      ...fields,
      status: 'failed',
      failed_at: now,
      ended_at: now,
      errors: JSON.stringify(errors),
    });
    return (await batches.get(p.accountId, b.id))!;
  }
  const lines: StoredLine[] = b.read.lines.map((l) => ({
    customId: l.customId,
    body: l.body,
    estimate: l.estimate,
    budget: l.budget,
  }));
  // The lines first (the runner reads them when it first sees the record); then the batch is
  // filed for the runners before its hold and record (core/batches.ts `file`): a creation cut after
  // this leaves an entry the runner resolves, never a record in `validating` nobody runs.
  const key = linesKey(p.accountId, b.id);
  await ctx.media.store.put(key, Buffer.from(JSON.stringify(lines)), 'application/json');
  try {
    await batches.file(p.accountId, b.id);
    await hold(d, p, b.id, b.read.estimate);
    await batches.create(p.accountId, b.id, { ...fields, status: 'validating' });
  } catch (err) {
    // Nothing of it runs. The record may have been written though its answer was lost: it is
    // failed. What of this cannot be done now, the runner does after the grace (./keys.ts).
    await batches
      .move(p.accountId, b.id, ['validating'], 'failed', { failed_at: now, ended_at: now })
      .catch(() => {});
    await d.leases.releaseLease({ accountId: p.accountId, leaseId: batchLeaseId(b.id) }).catch(() => {});
    await batches.unfile(p.accountId, b.id).catch(() => {});
    await ctx.media.store.delete(key).catch(() => {});
    throw err;
  }
  return (await batches.get(p.accountId, b.id))!;
}

/**
 * Holds the whole estimate, or nothing (429). The hold is the key's too: a key with a spend limit
 * must have the whole estimate left in its window's period (less what its calls and other batches
 * hold), refused as an interactive call is (limit_source `key`), and the lines' charges count in
 * its window as they are billed. The account's budget across its keys is held to the same way
 * (limit_source `account`): the estimate is held against it while the batch runs.
 */
async function hold(d: CreateDeps, p: Principal, id: string, estimate: number): Promise<void> {
  if (estimate === 0) return;
  if (!Number.isSafeInteger(estimate))
    throw new ApiError('invalid_request', 'The batch is too large to be paid for.');
  const grow = () =>
    d.leases.extendLease({
      accountId: p.accountId,
      leaseId: batchLeaseId(id),
      add: estimate,
      min: estimate,
      den: 1,
      ttlMs: BATCH_LEASE_TTL_MS,
      keyId: p.keyId,
    });
  let r = await grow();
  // The replicas' credit leases may sit on money the balance has: they give it back first (as for
  // an interactive call near its limit, ../billing/charge.ts), so a lease never refuses a batch the
  // balance covers. Leases hold the account's money, not the key's: a key's limit is final.
  const reclaim = d.ctx.billing.reclaim;
  if (r.grown < estimate && r.keyLimit === null && reclaim !== null) {
    await reclaim.reclaim(p.accountId);
    r = await grow();
  }
  if (r.grown < estimate) {
    await d.leases.releaseLease({ accountId: p.accountId, leaseId: batchLeaseId(id) });
    throw r.keyLimit === null ? insufficientQuota() : keySpendLimitReached(r.keyLimit, p.currency ?? null);
  }
}
