// A batch's creation, for both APIs (docs/batches.md): its lines read and checked (./input.ts); a
// bad line fails the batch at once with the lines' errors and nothing held or charged; otherwise
// the sum of the lines' estimates at the batch price is held against the account's credit and the
// key's spend limit, through billing (../billing/batch-money.ts `hold`) — all of it or none, 429
// insufficient_quota, so a batch can never overdraw nor pass its key's budget; money the replicas'
// credit leases sit on is given back first, so a lease never refuses a batch the balance covers —
// the lines copied beside the input (which may be deleted meanwhile), and the batch filed for the
// runner.

import { batchTokenPrice } from '../../core/billing/index.ts';
import type { Batches } from '../../core/jobs/batches.ts';
import type { RecordFields } from '../../core/jobs/listed-records.ts';
import type { Principal } from '../auth/key-cache.ts';
import { tokenModel } from '../calls/resolve-model.ts';
import type { ProxyContext } from '../context.ts';
import type { BatchEndpoint, InputOptions, ReadInput } from './input.ts';
import { linesKey, type StoredLine } from './keys.ts';

export interface CreateDeps {
  ctx: ProxyContext;
  batches: Batches;
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
  // filed for the runners before its hold and record (core/jobs/batches.ts `file`): a creation cut after
  // this leaves an entry the runner resolves, never a record in `validating` nobody runs.
  const key = linesKey(p.accountId, b.id);
  await ctx.media.store.put(key, Buffer.from(JSON.stringify(lines)), 'application/json');
  try {
    await batches.file(p.accountId, b.id);
    await ctx.billing.batches.hold(p, b.id, b.read.estimate);
    await batches.create(p.accountId, b.id, { ...fields, status: 'validating' });
  } catch (err) {
    // Nothing of it runs. The record may have been written though its answer was lost: it is
    // failed. What of this cannot be done now, the runner does after the grace (./keys.ts).
    await batches
      .move(p.accountId, b.id, ['validating'], 'failed', { failed_at: now, ended_at: now })
      .catch(() => {});
    await ctx.billing.batches.release(p.accountId, b.id).catch(() => {});
    await batches.unfile(p.accountId, b.id).catch(() => {});
    await ctx.media.store.delete(key).catch(() => {});
    throw err;
  }
  return (await batches.get(p.accountId, b.id))!;
}
