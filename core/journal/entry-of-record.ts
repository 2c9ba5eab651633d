// A journal transfer in the shape of a usage stream entry: how the journal's readers (call pages,
// the money history) hand archived transfers on as the stream's own entries.
import type { UsageEntry } from '../usage/usage.ts';
import type { JournalRecord } from './journal.ts';

/** A journal transfer in the shape of a usage stream entry. */
export function entryOfRecord(r: JournalRecord): UsageEntry {
  return {
    id: r.streamId ?? `${r.atMs}-0`,
    atMs: r.atMs,
    type: r.kind,
    opId: r.id,
    amount: r.amount,
    cost: r.cost,
    short: r.short,
    held: r.held,
    source: r.source,
    reason: r.reason,
    leaseId: r.leaseId,
    refundOf: r.refundOf,
    balance: r.balanceAfter ?? 0,
    keyId: r.keyId,
    model: r.model,
    kind: r.callKind as UsageEntry['kind'],
    inputTokens: r.inputTokens,
    cachedTokens: r.cachedTokens,
    outputTokens: r.outputTokens,
    images: r.images,
    videoSeconds: r.videoSeconds,
    requestId: r.requestId,
    note: r.note,
  };
}
