// One call's money, start to end (DESIGN "Money"). Every route that charges (chat, embeddings, and
// the modalities still to come) uses this object and nothing else, so each rule below holds once
// for all of them:
//
// 1. Billing.open makes it, or refuses the call with a retryable 500 while settlements cannot reach
//    Redis (the outbox has failed for longer than PROXY_OUTBOX_STALL_MS): the proxy does not serve
//    what it cannot bill.
// 2. hold(run) holds the call's worst case (the route's Quote) and runs the engine call under it.
//    How it holds is chosen here and only here:
//    - carved from this replica's lease: in memory, no Redis before the first byte;
//    - reserved first, near the limit or when the balance is unknown: the allowance (output
//      tokens) is lowered to what the hold covers, and 429 insufficient_quota when not even the
//      input is covered. A reserve that comes back short first has every replica give back its
//      unused lease money on the account (LeaseReclaim), then tries once more;
//    - reserved alongside the engine call, when the balance is far above the hold: metering adds no
//      round trip to the first byte. A short reserve cancels the engine call before anything
//      reached the client and the call runs again as above, as a new engine attempt.
//    A key with a monthly spend limit or a rate limit always reserves first: the reserve script checks the limit
//    with the balance, atomically, and lowers the hold (so the allowance) to what the key may still
//    spend; a lease carve or a reserve alongside would run before that check. When the key's limit,
//    not the balance, refuses the call, the 429 names the limit (and no lease is reclaimed for it).
//    The same reserve takes the call's share of the key's rate windows (core/billing/lua/windows.lua)
//    or refuses it with 429 rate_limit_exceeded and a Retry-After; `windows` keeps their standing
//    for the answer's rate-limit headers.
//    A reserved hold is renewed while the call runs (HoldRenewer); a lease renews itself. Only a
//    hold whose proxy died reaches its expiry, and the sweeper voids it in the ledger.
// 3. settle(cost, counts, deliver) when the call's answer is complete: the settlement goes into the
//    outbox's journal, and `deliver` (which sends the last bytes) runs once it is in the file, so
//    a delivered call is never forgotten, even by a process killed right after. The outbox sends it
//    until Redis acknowledges it (in a lease batch, or on its own for a reserved hold).
//    The true cost is charged: the hold first, any excess from the spare balance, and what cannot
//    be collected is recorded beside it (short) and counted.
// 4. release() when nothing billable happened: the hold goes back.
// A call charged at once (a video job, charged at creation) makes no hold: chargeNow() is its
// settlement, in Redis before its answer, behind the same gate and counted in the same metrics.
// Its refund (a job that failed) goes through Billing.refund.
import type {
  ChargeResult,
  KeySpend,
  Metering,
  RateRefusal,
  UsageRecord,
  Voided,
  WindowsState,
} from '../../core/billing/index.ts';
import { insufficientQuota, keySpendLimitReached, rateLimitExceeded } from '../../core/errors.ts';
import type { CallUsage } from '../usage.ts';
import type { BalanceView } from './balance-view.ts';
import type { CallInfo, Charge, HeldRun, Quote } from './charge-types.ts';
import type { HoldRenewer } from './hold-renewer.ts';
import type { Progress } from './journal-lines.ts';
import type { LeaseReclaim } from './lease-reclaim.ts';
import type { CreditLeases } from './leases.ts';
import type { Outbox } from './outbox.ts';
import type { SlotLines, Turn } from './slot-lines.ts';

export type { CallInfo, Charge, HeldRun, Quote } from './charge-types.ts';

/** What a charge needs of its replica's billing (Billing implements it). */
export interface ChargeDeps {
  metering: Metering;
  leases: CreditLeases | null;
  outbox: Outbox;
  renewer: HoldRenewer;
  reclaim: LeaseReclaim | null;
  balances: BalanceView;
  holdTtlMs: number;
  /** This replica's lines for keys' calls-at-once slots, for accounts that wait for one (./slot-lines.ts). */
  slots: SlotLines;
  /** Whether the account's known balance is far enough above `hold` to reserve alongside the call. */
  mayReserveAlongside(accountId: string, hold: number): boolean;
  observe(charge: CallCharge, counts: CallUsage, charged: number, short: number): void;
  observeVoids(v: Voided): void;
  /** The charge is settled or released: it no longer holds anything. */
  finished(charge: CallCharge): void;
  onError(err: unknown, what: string): void;
}

/** Abort reason of a concurrent engine call whose reserve did not cover it. */
export class ReservationShortError extends Error {
  constructor() {
    super('The credit reservation did not cover the request.');
    this.name = 'ReservationShortError';
  }
}

/** reserve()'s answer when not even the quote's min could be held. */
const NOT_COVERED = -1;

const noop = () => {};

export class CallCharge implements Charge {
  /** What the engine call was allowed once held (text: output tokens, all choices together). */
  allowance = 0;
  /**
   * The hold covers the engine call now running: a 429 can no longer come of it, so an answer may
   * be committed to (a stream's head written) before the engine has said anything. False while a
   * reservation made alongside the call is on its way, or came back short (the call runs again).
   */
  covered = false;
  private state: 'open' | 'held' | 'done' = 'open';
  private leased = false;
  private held = 0;
  /** The key's standing when its spend limit lowered or refused the last reserve, else null. */
  private keyLimit: KeySpend | null = null;
  /** The key's rate limit that refused the last reserve, else null. */
  rateLimit: RateRefusal | null = null;
  /** The key's rate windows after this call's reserve took its share; null without a limit. */
  windows: WindowsState | null = null;
  /** A stream's bill so far (trackProgress), and the cost last journaled from it. */
  private billSoFar: (() => { cost: number; usage: CallUsage }) | null = null;
  private progressed = 0;

  constructor(
    private readonly b: ChargeDeps,
    readonly call: CallInfo,
    readonly quote: Quote,
  ) {}

  private get accountId(): string {
    return this.call.principal.accountId;
  }

  /** Holds credit for the call and runs it; a call that fails or is refused holds nothing after. */
  async hold<T>(h: HeldRun<T>): Promise<T> {
    try {
      return await this.holdAndRun(h);
    } catch (err) {
      this.release();
      throw err;
    }
  }

  /**
   * The call is done: charge `cost` (its true cost, never capped at the hold) with its usage, and
   * run `deliver` (send the last bytes) once the settlement is in the journal file — at the end of
   * this event-loop turn, one write for every call finishing in it. Never throws.
   */
  settle(cost: number, counts: CallUsage, deliver: () => void = noop): void {
    let record: number | null = null;
    if (this.state === 'held') record = this.charge(cost, counts);
    else this.state = 'done';
    const span = this.call.trace?.settlement(counts);
    // The call counts as running until its answer is out, so shutdown waits for the last bytes.
    this.b.outbox.afterJournaled(() => {
      span?.end();
      try {
        deliver();
      } finally {
        this.b.finished(this);
      }
    }, record);
  }

  /**
   * A call charged at once, with no hold (a video job: the script also records what it buys):
   * made in Redis now and counted like a settlement. Refused charges (`ok` false) cost nothing.
   */
  async chargeNow(a: Parameters<Metering['charge']>[0]): Promise<ChargeResult> {
    if (this.state !== 'open') throw new Error('a charge is made once, before any hold');
    this.state = 'done';
    try {
      const r = await this.b.metering.charge(a);
      if (r.ok && !r.duplicate) this.b.observe(this, { videoSeconds: a.usage.videoSeconds }, r.charged, 0);
      return r;
    } finally {
      this.b.finished(this);
    }
  }

  /**
   * A stream says how to bill what it delivered so far: Billing journals it every
   * PROXY_STREAM_PROGRESS_MS, so a crash of this replica loses at most one interval (issue 22).
   */
  trackProgress(bill: () => { cost: number; usage: CallUsage }): void {
    this.billSoFar = bill;
  }

  /** The settlement this call would be now, when it grew since the last one asked; else null. */
  progress(): Progress | null {
    if (this.state !== 'held' || this.billSoFar === null) return null;
    const { cost, usage } = this.billSoFar();
    if (cost <= this.progressed) return null;
    this.progressed = cost;
    return {
      accountId: this.accountId,
      leaseId: this.leased ? (this.b.leases?.leaseId ?? null) : null,
      holdId: this.call.requestId,
      cost,
      carved: this.held,
      usage: this.usageRecord(usage),
    };
  }

  private usageRecord(counts: CallUsage): UsageRecord {
    const { principal, model, kind, requestId } = this.call;
    // Spelled out, not spread: built once per request on the hot path.
    return {
      keyId: principal.keyId,
      model,
      kind,
      inputTokens: counts.inputTokens,
      cachedTokens: counts.cachedTokens,
      outputTokens: counts.outputTokens,
      images: counts.images,
      videoSeconds: counts.videoSeconds,
      requestId,
    };
  }

  /** Journals the call's settlement and sends it; returns its record's seq (null: none was made). */
  private charge(cost: number, counts: CallUsage): number | null {
    this.state = 'done';
    const usage = this.usageRecord(counts);
    const { requestId } = this.call;
    const observe = (charged: number, short: number) => this.b.observe(this, counts, charged, short);
    try {
      if (this.leased) {
        return (
          this.b.leases?.settle(this.accountId, {
            holdId: requestId,
            carved: this.held,
            cost,
            usage,
            onCharged: observe,
          }) ?? null
        );
      }
      this.b.renewer.forget(this.accountId, requestId);
      const record = this.b.outbox.recordHold({
        accountId: this.accountId,
        holdId: requestId,
        cost,
        carved: this.held,
        usage,
      });
      this.b.outbox.sendHold(record).then(
        (r) => {
          this.b.balances.set(this.accountId, r.balance);
          observe(r.charged, r.short);
          this.slotBack();
        },
        // Only at shutdown, with Redis out of reach: the journal keeps it for the next start.
        (err) => this.b.onError(err, 'settle'),
      );
      return record.seq;
    } catch (err) {
      // A record the scripts would refuse: a bug, logged loudly; the hold must not stay held for it.
      this.b.onError(err, 'settle');
      this.giveBack();
      return null;
    }
  }

  /** Nothing billable happened: the hold goes back. Never throws. */
  release(): void {
    if (this.state === 'done') return;
    const was = this.state;
    this.state = 'done';
    this.b.finished(this);
    if (was === 'held') this.giveBack();
  }

  private giveBack(): void {
    if (this.leased) {
      this.b.leases?.uncarve(this.accountId, this.held);
      return;
    }
    this.b.renewer.forget(this.accountId, this.call.requestId);
    // If this fails, the hold is no longer renewed: it expires and the sweeper voids it.
    this.b.metering.release(this.accountId, this.call.requestId).then(
      () => this.slotBack(),
      (err) => this.b.onError(err, 'release'),
    );
  }

  /** A reserved hold of a rate-limited key ended in Redis: a call of the key waiting here may take its slot. */
  private slotBack(): void {
    if (this.call.principal.rateLimited === true) this.b.slots.freed(this.call.principal.keyId);
  }

  private async holdAndRun<T>(h: HeldRun<T>): Promise<T> {
    const { quote } = this;
    const { principal } = this.call;
    if (principal.spendLimit !== null || principal.rateLimited === true || principal.accountBudget === true)
      return this.runWith(await this.reserve(), h);
    if (this.b.leases?.tryCarve(this.accountId, quote.max)) {
      this.state = 'held';
      this.leased = true;
      this.held = quote.max;
      return this.runWith(quote.full, h);
    }
    if (!this.b.mayReserveAlongside(this.accountId, quote.max)) return this.runWith(await this.reserve(), h);
    // The concurrent attempt's Cancel follows the request's for the call's whole life (a relayed
    // stream must still stop when the client leaves), and also stops alone on a short reserve.
    const attempt = this.call.cancel.child();
    const reservation = this.reserve();
    reservation.then(
      (allowance) => {
        if (allowance < quote.full) attempt.abort(new ReservationShortError());
        else this.covered = true;
      },
      (err) => attempt.abort(err),
    );
    const [call, reserved] = await Promise.allSettled([h.run(quote.full, attempt), reservation]);
    const drop = () => {
      if (call.status === 'fulfilled') h.discard(call.value);
    };
    if (reserved.status === 'rejected') {
      drop();
      throw reserved.reason;
    }
    if (reserved.value >= quote.full) {
      if (call.status === 'rejected') throw call.reason;
      this.allowance = quote.full;
      return call.value;
    }
    drop();
    return this.runWith(reserved.value, h);
  }

  private runWith<T>(allowance: number, h: HeldRun<T>): Promise<T> {
    // A call that may generate output but is allowed none is not worth making (output is billed).
    if (allowance === NOT_COVERED || (this.quote.full > 0 && allowance < 1)) {
      if (this.rateLimit !== null) throw rateLimitExceeded(this.rateLimit);
      throw this.keyLimit === null
        ? insufficientQuota()
        : keySpendLimitReached(this.keyLimit, this.call.principal.currency);
    }
    this.allowance = allowance;
    this.covered = true;
    return h.run(allowance, this.call.cancel);
  }

  /** Reserves in Redis; returns the allowance the hold pays for, or NOT_COVERED. */
  private async reserve(): Promise<number> {
    const { quote } = this;
    let r = await this.reserveWaiting();
    // Leases hold the account's money, not the key's: when the key's limit is what fell short,
    // reclaiming them cannot help.
    const limited = r.keyLimit !== null || (!r.ok && r.rateLimit !== null);
    if ((!r.ok || r.held < quote.max) && !limited && this.b.reclaim !== null) {
      // Near the limit: leases (this replica's and the others') may sit on money the balance has.
      // They give it back first, so a lease never lowers max_tokens or refuses a call it covers.
      if (r.ok) await this.dropHold();
      await this.b.reclaim.reclaim(this.accountId);
      r = await this.reserveOnce();
    }
    this.b.balances.set(this.accountId, r.available);
    this.keyLimit = r.keyLimit;
    this.rateLimit = r.ok ? null : r.rateLimit;
    this.windows = r.ok ? r.windows : (r.rateLimit?.windows ?? null);
    if (!r.ok) return NOT_COVERED;
    return r.held >= quote.max ? quote.full : quote.allowance(r.held);
  }

  /**
   * The reserve, for an account that waits for a key's calls-at-once slot (its
   * `concurrencyQueueSeconds`): refused by that limit, the call waits in this replica's line for the
   * key (./slot-lines.ts) and tries again, until it holds or its wait is over (then the refusal
   * stands, with the retry the last reserve estimated). Behind calls of the key already waiting
   * here, it waits its turn before its first try.
   */
  private async reserveWaiting() {
    const { principal, cancel } = this.call;
    const waitMs = principal.slotWaitMs ?? 0;
    if (waitMs <= 0) return this.reserveOnce();
    const deadline = performance.now() + waitMs;
    let turn: Turn | null = null;
    try {
      if (this.b.slots.busy(principal.keyId)) {
        turn = this.b.slots.join(principal.keyId);
        await turn.next(waitMs, deadline, cancel);
      }
      let r = await this.reserveOnce();
      while (!r.ok && r.rateLimit?.limit === 'concurrentCalls' && performance.now() < deadline) {
        turn ??= this.b.slots.join(principal.keyId);
        await turn.next(r.rateLimit.retryAfterMs, deadline, cancel);
        r = await this.reserveOnce();
      }
      return r;
    } finally {
      turn?.leave();
    }
  }

  private async reserveOnce() {
    try {
      const r = await this.b.metering.reserve({
        accountId: this.accountId,
        holdId: this.call.requestId,
        min: this.quote.min,
        max: this.quote.max,
        ttlMs: this.b.holdTtlMs,
        // Always named, so the key's limit binds even if this replica's cached principal is stale.
        keyId: this.call.principal.keyId,
        tokens: this.quote.tokens,
      });
      this.b.observeVoids(r.voided);
      if (r.ok && this.state === 'done') {
        // Released while the reserve was on its way (the call ended): hold nothing for it.
        this.b.metering
          .release(this.accountId, this.call.requestId)
          .catch((err) => this.b.onError(err, 'release'));
        return {
          ok: false as const,
          available: r.available,
          voided: r.voided,
          keyLimit: null,
          rateLimit: null,
        };
      }
      if (r.ok) {
        this.state = 'held';
        this.held = r.held;
        this.b.renewer.track(this.accountId, this.call.requestId);
      }
      return r;
    } catch (err) {
      // The reply was lost, not necessarily the hold: drop whatever it made (release is idempotent).
      this.b.metering.release(this.accountId, this.call.requestId).catch(() => {});
      throw err;
    }
  }

  private async dropHold(): Promise<void> {
    this.state = 'open';
    this.b.renewer.forget(this.accountId, this.call.requestId);
    await this.b.metering.release(this.accountId, this.call.requestId);
  }
}
