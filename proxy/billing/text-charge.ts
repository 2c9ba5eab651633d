// The credit side of one text call (chat or embeddings): size the hold from the prompt and the
// output bound (core/billing/pricing), reserve it, and settle the actual cost from the engine's
// usage after the response is sent (DESIGN "Money"). Settling is exactly-once per hold id, so it
// is retried freely; a hold that still cannot be settled expires and is swept (nothing charged).

import {
  type Metering,
  maxTokensCovered,
  textCost,
  textHold,
  type UsageRecord,
} from '../../core/billing/index.ts';
import type { CatalogueEntry, TokenPrice } from '../../core/catalogue/index.ts';
import type { Principal } from '../auth/key-cache.ts';
import type { ProxyMetrics } from '../plugins/metrics.ts';
import { fastId } from '../plugins/request-id.ts';
import type { BalanceView } from './balance-view.ts';
import type { CreditLeases } from './leases.ts';

export interface TextUsage {
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
}

export interface TextChargeDeps {
  metering: Metering;
  /** This replica's credit leases; null reserves every request in Redis. */
  leases: CreditLeases | null;
  balances: BalanceView;
  metrics: ProxyMetrics;
  holdTtlMs: number;
  /** Reserve alongside the engine call when the known balance is this many holds or more; 0 = never. */
  concurrentFactor: number;
  onError: (err: unknown, what: string) => void;
  /** Registers a settlement still running, so shutdown can wait for it. */
  track: (p: Promise<unknown>) => void;
}

export type Reservation = { ok: true; held: number; coveredTokens: number } | { ok: false };

const SETTLE_ATTEMPTS = 3;

export class TextCharge {
  readonly holdId = fastId('hold');
  readonly hold: { min: number; max: number };
  private reserved = false;
  /** The hold was carved from this replica's lease (settled in a batch), not reserved in Redis. */
  private leased = false;
  private finished = false;

  constructor(
    private readonly deps: TextChargeDeps,
    private readonly a: {
      principal: Principal;
      entry: CatalogueEntry;
      price: TokenPrice;
      kind: 'chat' | 'embedding';
      requestId: string;
      promptBytes: number;
      maxOutputTokens: number;
    },
  ) {
    this.hold = textHold(a.price, { promptBytes: a.promptBytes, maxOutputTokens: a.maxOutputTokens });
  }

  /** True when the balance is far enough above the hold to start the engine before the reserve returns. */
  mayRunConcurrently(): boolean {
    const f = this.deps.concurrentFactor;
    if (f <= 0) return false;
    const known = this.deps.balances.available(this.a.principal.accountId);
    return known !== undefined && known >= f * Math.max(this.hold.max, 1);
  }

  /**
   * The hold carved synchronously from this replica's lease (whole upper bound, no Redis), or null
   * when the lease cannot cover it and the request must reserve.
   */
  tryLease(): Reservation | null {
    const leases = this.deps.leases;
    if (leases === null || !leases.tryCarve(this.a.principal.accountId, this.hold.max)) return null;
    this.reserved = true;
    this.leased = true;
    return { ok: true, held: this.hold.max, coveredTokens: this.a.maxOutputTokens };
  }

  async reserve(): Promise<Reservation> {
    const accountId = this.a.principal.accountId;
    const reserve = () =>
      this.deps.metering.reserve({
        accountId,
        holdId: this.holdId,
        min: this.hold.min,
        max: this.hold.max,
        ttlMs: this.deps.holdTtlMs,
      });
    let r = await reserve();
    const leases = this.deps.leases;
    if ((!r.ok || r.held < this.hold.max) && leases !== null && leases.freeOf(accountId) > 0) {
      // Near the limit: this replica's own idle lease money goes back first, then the exact reserve
      // runs again, so a lease never lowers max_tokens or refuses a call that the balance covers.
      if (r.ok) await this.deps.metering.release(accountId, this.holdId);
      await leases.shrink(accountId);
      r = await reserve();
    }
    this.deps.balances.set(accountId, r.available);
    if (!r.ok) return { ok: false };
    this.reserved = true;
    const coveredTokens =
      r.held >= this.hold.max
        ? this.a.maxOutputTokens
        : Math.min(
            this.a.maxOutputTokens,
            maxTokensCovered(this.a.price, { held: r.held, promptBytes: this.a.promptBytes }),
          );
    return { ok: true, held: r.held, coveredTokens };
  }

  /** Charges what the engine reported. Never throws: it runs after the response is sent. */
  settle(u: TextUsage): Promise<void> {
    if (!this.reserved || this.finished) return Promise.resolve();
    this.finished = true;
    if (this.leased) {
      this.settleLeased(u);
      return Promise.resolve();
    }
    const p = this.settleNow(u);
    this.deps.track(p);
    return p;
  }

  /** Queued for the account's next batch: nothing is awaited on the response path. */
  private settleLeased(u: TextUsage): void {
    const { principal } = this.a;
    this.deps.leases?.settle(principal.accountId, {
      holdId: this.holdId,
      carved: this.hold.max,
      // As settle charges min(cost, held): the carve bounds the charge.
      cost: Math.min(textCost(this.a.price, u), this.hold.max),
      usage: this.usageRecord(u),
      onCharged: (charged) => this.observe(u, charged),
    });
  }

  /** The usage record of this request (spelled out, not spread: built once per request). */
  private usageRecord(u: TextUsage): UsageRecord {
    const { principal, entry, kind, requestId } = this.a;
    return {
      keyId: principal.keyId,
      model: entry.id,
      kind,
      inputTokens: u.inputTokens,
      cachedTokens: u.cachedTokens,
      outputTokens: u.outputTokens,
      requestId,
    };
  }

  private async settleNow(u: TextUsage): Promise<void> {
    const { principal } = this.a;
    const cost = textCost(this.a.price, u);
    for (let attempt = 1; ; attempt++) {
      try {
        const r = await this.deps.metering.settle({
          accountId: principal.accountId,
          holdId: this.holdId,
          cost,
          usage: this.usageRecord(u),
        });
        this.observe(u, r.charged);
        this.deps.balances.set(principal.accountId, r.balance);
        return;
      } catch (err) {
        if (attempt >= SETTLE_ATTEMPTS) return this.deps.onError(err, 'settle');
        await new Promise((r) => setTimeout(r, 50 * attempt));
      }
    }
  }

  /** Drops the hold without a charge: nothing was generated. Never throws. */
  async release(): Promise<void> {
    if (!this.reserved || this.finished) return;
    this.finished = true;
    if (this.leased) return this.deps.leases?.uncarve(this.a.principal.accountId, this.hold.max);
    try {
      await this.deps.metering.release(this.a.principal.accountId, this.holdId);
    } catch (err) {
      this.deps.onError(err, 'release'); // the hold expires after its ttl and is swept
    }
  }

  private observe(u: TextUsage, charged: number): void {
    const m = this.deps.metrics;
    const model = this.a.entry.id;
    m.tokensOf(model, 'input').inc(u.inputTokens);
    m.tokensOf(model, 'cached').inc(u.cachedTokens);
    m.tokensOf(model, 'output').inc(u.outputTokens);
    m.creditsOf(model, this.a.principal.currency ?? '').inc(charged);
  }
}

/** When an engine reports no usage at all: about four bytes per token, counted frames for output. */
export function estimatedUsage(promptBytes: number, outputTokens: number): TextUsage {
  return { inputTokens: Math.ceil(promptBytes / 4), cachedTokens: 0, outputTokens };
}

/** OpenAI-style usage → billable token counts; cached is a subset of input (BILL-2). */
export function usageFromEngine(u: unknown): TextUsage | null {
  if (typeof u !== 'object' || u === null) return null;
  const o = u as Record<string, unknown>;
  const input = count(o.prompt_tokens);
  if (input === null) return null;
  const details = o.prompt_tokens_details as Record<string, unknown> | null | undefined;
  const cached = Math.min(count(details?.cached_tokens) ?? 0, input);
  return { inputTokens: input, cachedTokens: cached, outputTokens: count(o.completion_tokens) ?? 0 };
}

function count(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null;
}
