// What the ledger scripts take, checked and encoded on this side of Redis: amounts as integer
// nano-units below 2^53, ttls, and a call's usage as the positional block common.lua's read_usage
// reads. Shared by the per-call metering (./metering.ts) and the lease scripts (./leases.ts).
import { MAX_SAFE_NANO } from '../money.ts';

/** A call's usage as the ledger records it (a usage entry, the rollups). */
export interface UsageRecord {
  keyId: string | null;
  model: string;
  /** `service`: a charge of the service ledger API (not an API call; kept out of the rollups). */
  kind: 'chat' | 'embedding' | 'image' | 'video' | 'service';
  inputTokens?: number;
  cachedTokens?: number;
  outputTokens?: number;
  images?: number;
  videoSeconds?: number;
  requestId?: string;
}

export function nano(name: string, v: number): void {
  if (!Number.isSafeInteger(v) || v < 0 || v > MAX_SAFE_NANO) {
    throw new RangeError(`${name} must be a non-negative integer of nano-units below 2^53, got ${v}`);
  }
}

export function ttl(ms: number): void {
  if (!Number.isSafeInteger(ms) || ms <= 0) throw new RangeError('ttlMs must be a positive integer');
}

function count(name: string, v: number | undefined): string {
  if (v === undefined) return '';
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`usage.${name} must be a non-negative integer`);
  return String(v);
}

/** The usage block in the order common.lua's read_usage expects. */
export function usageArgs(u: UsageRecord): string[] {
  if (u.model.length === 0) throw new RangeError('usage.model is required');
  let vsec = '';
  let vms = '';
  if (u.videoSeconds !== undefined) {
    if (!Number.isFinite(u.videoSeconds) || u.videoSeconds < 0) {
      throw new RangeError('usage.videoSeconds must be a non-negative number');
    }
    // Rollups count integers, so video time is summed in milliseconds.
    vsec = String(u.videoSeconds);
    vms = String(Math.round(u.videoSeconds * 1000));
  }
  return [
    u.keyId ?? '',
    u.model,
    u.kind,
    count('inputTokens', u.inputTokens),
    count('cachedTokens', u.cachedTokens),
    count('outputTokens', u.outputTokens),
    count('images', u.images),
    vsec,
    vms,
    u.requestId ?? '',
  ];
}
