// The decisions of leader election, apart from the API calls (leader.ts does those): when to take
// the Lease, which term a new leader writes, and when a leader must step down. Pure, with the time
// passed in, so the timings that keep two leaders from overlapping are tested without a cluster.
//
// Why it is safe, with D the lease duration, R the renew deadline and T the request timeout:
// - A follower counts a Lease as expired only after it has seen the same record (resourceVersion)
//   for D by its own clock, from when a read returned — never from the record's renewTime, which is
//   another machine's clock. While its reads fail it cannot see renewals, so the count restarts
//   after the gap: an API server that stalls for everyone hands nothing over when it resumes, the
//   holder simply renews.
// - A leader's term ends R after its last renewal *succeeded* (a clock runs it, leader.ts's timer;
//   it does not wait for a hung request to return). The renewal was committed at most T before it
//   returned, and a follower saw that record no earlier than it was committed, so the leader stops
//   by commit + T + R, and a follower takes over no earlier than commit + D. T + R < D is checked
//   when the timings are made, with room left for clocks that run at slightly different rates.
// - Every new term writes leaseTransitions + 1 (at least the catalogue's fence + 1), through a
//   write guarded by resourceVersion, so terms are ordered as the API server ordered the writes: the
//   token the catalogue fence compares (core/catalogue/fence.ts).

export interface LeaseTimings {
  leaseDurationMs: number;
  /** A leader steps down when its renewals have not succeeded for this long (client-go: 2/3 D). */
  renewDeadlineMs: number;
  /** Every API request is abandoned after this long. */
  requestTimeoutMs: number;
  /** How often a leader renews and a follower looks (client-go's retry period). */
  retryMs: number;
}

/** client-go's ratios (15 s, 10 s, 2 s) and a request timeout of D/4; overrides are checked. */
export function leaseTimings(leaseDurationSeconds = 15, over: Partial<LeaseTimings> = {}): LeaseTimings {
  const d = leaseDurationSeconds * 1000;
  const t: LeaseTimings = {
    leaseDurationMs: d,
    renewDeadlineMs: over.renewDeadlineMs ?? Math.round((d * 2) / 3),
    requestTimeoutMs: over.requestTimeoutMs ?? Math.round(d / 4),
    retryMs: over.retryMs ?? Math.round(d / 7.5),
  };
  // A twentieth of D is left for clock-rate differences between replicas.
  if (t.requestTimeoutMs + t.renewDeadlineMs > d * 0.95) {
    throw new Error(
      `lease timings overlap: request timeout ${t.requestTimeoutMs} ms + renew deadline ${t.renewDeadlineMs} ms must stay under 95% of the ${d} ms lease`,
    );
  }
  if (t.retryMs >= t.renewDeadlineMs) {
    throw new Error(
      `retry period ${t.retryMs} ms must be shorter than the renew deadline ${t.renewDeadlineMs} ms`,
    );
  }
  return t;
}

/** The Lease as leader election needs it (null when there is none). */
export interface LeaseView {
  holder: string;
  transitions: number;
  /** resourceVersion: changes with every write, so "unchanged" means "not renewed". */
  version: string;
  durationMs: number;
}

export type Move =
  | { kind: 'create'; term: number }
  /** We lead and hold it: renew under the same term. */
  | { kind: 'renew'; term: number }
  /** Free, expired, released, or ours while we do not lead: a new term. */
  | { kind: 'acquire'; term: number }
  /** Someone else holds it; `lost` when we were leading until now. */
  | { kind: 'wait'; lost: boolean };

export class Leadership {
  private leadingTerm: number | null = null;
  private renewedAt = 0;
  private observed: { version: string; at: number } | undefined;
  /** A read failed since the last one that returned: renewals may have happened unseen. */
  private blind = true;
  private heldByUs = false;

  constructor(
    private readonly identity: string,
    private readonly timings: LeaseTimings,
  ) {}

  get leading(): boolean {
    return this.leadingTerm !== null;
  }

  get term(): number | null {
    return this.leadingTerm;
  }

  /**
   * Whether it must keep retrying at the retry period: a leader (its deadline runs), or the holder
   * named by the last record seen (after a stall it takes its Lease back before anyone may take it
   * over). Other followers may back off.
   */
  get urgent(): boolean {
    return this.leading || this.heldByUs;
  }

  /** When the term ends unless a renewal succeeds first (undefined when not leading). */
  get deadline(): number | undefined {
    return this.leading ? this.renewedAt + this.timings.renewDeadlineMs : undefined;
  }

  /** What to do after a read returned at `now`. Records what was seen. */
  decide(lease: LeaseView | null, now: number): Move {
    this.heldByUs = lease?.holder === this.identity;
    if (!lease) {
      this.observed = undefined;
      this.blind = false;
      return { kind: 'create', term: 1 };
    }
    if (this.blind || this.observed?.version !== lease.version) {
      this.observed = { version: lease.version, at: now };
    }
    this.blind = false;
    const next = lease.transitions + 1;
    if (lease.holder === this.identity) {
      return this.leading ? { kind: 'renew', term: lease.transitions } : { kind: 'acquire', term: next };
    }
    const expired = now - (this.observed?.at ?? now) >= lease.durationMs;
    if (lease.holder === '' || expired) return { kind: 'acquire', term: next };
    const lost = this.leading;
    this.leadingTerm = null;
    return { kind: 'wait', lost };
  }

  /** A read or write failed (timed out, refused): the follower's count of silence restarts later. */
  failed(): void {
    this.blind = true;
  }

  /** Our write of `term` returned at `now`. True when this starts a term (we were not leading). */
  wrote(term: number, now: number): boolean {
    const started = this.leadingTerm === null;
    this.leadingTerm = term;
    this.heldByUs = true;
    this.renewedAt = now;
    return started;
  }

  /** Ends the term if its deadline passed. True when it stepped down. */
  expire(now: number): boolean {
    const deadline = this.deadline;
    if (deadline === undefined || now < deadline) return false;
    this.leadingTerm = null;
    return true;
  }

  /** Ends the term (stop, release). True when we were leading. */
  resign(): boolean {
    const was = this.leading;
    this.leadingTerm = null;
    return was;
  }
}

/** A move that writes the Lease. */
export type WriteMove = Exclude<Move, { kind: 'wait' }>;

/** A new term is also newer than any term that wrote the catalogue (a Lease recreated from 0). */
export function termAbove(move: WriteMove, floor: number): WriteMove {
  if (move.kind === 'renew') return move;
  return { ...move, term: Math.max(move.term, floor + 1) };
}
