// Leader election on a coordination.k8s.io/v1 Lease, written by hand (client-node has none). The
// decisions — when to take the Lease, which term to write, when to step down — are in
// leadership.ts; this file does the API calls and runs the clocks.
//
// Every write carries the resourceVersion we read, so two candidates cannot both win (the loser
// gets 409). Every request is abandoned after the request timeout (KubeClient), and the renew
// deadline is a timer armed at each successful renewal: a leader whose API connection hangs steps
// down on time even while its request is still in flight. Stepping down only stops this replica;
// what stops a deposed leader that has not noticed is the catalogue fence, keyed by the term
// (leaseTransitions) passed to onStartedLeading. On stop the leader releases the Lease so a peer
// takes over at once.
import { CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import { nextDelay } from './backoff.ts';
import { isAlreadyExists, isNotFound, type KubeClient } from './client.ts';
import { Leadership, type LeaseTimings, type LeaseView, leaseTimings, termAbove } from './leadership.ts';

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationSeconds?: number;
  /** Overrides of the timings derived from the lease duration (checked: see leadership.ts). */
  timings?: Partial<LeaseTimings>;
  /** The newest term that ever wrote (the catalogue fence): a new term is always above it. */
  termFloor?: () => Promise<number>;
  onStartedLeading: (term: number) => void;
  onStoppedLeading: () => void;
  onError?: (err: unknown) => void;
  /** The clock (tests). */
  now?: () => number;
}

/** MicroTime wants exactly six fractional digits; client-node would send Date's three. */
export const microTime = (d: Date) => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

export class LeaderElector {
  private readonly api: CoordinationV1Api;
  readonly timings: LeaseTimings;
  private readonly state: Leadership;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private inflight: Promise<void> | undefined;
  /** Failed attempts in a row while following: a follower backs off, a leader cannot. */
  private failures = 0;
  /** Attempts made (tests count them). */
  attempts = 0;

  constructor(
    kube: KubeClient,
    private readonly options: LeaderElectionOptions,
  ) {
    // The client's own timeout is the one requests get: the timings are checked against it.
    this.timings = leaseTimings(options.leaseDurationSeconds, {
      requestTimeoutMs: kube.requestTimeoutMs,
      ...options.timings,
    });
    this.api = kube.api(CoordinationV1Api);
    this.state = new Leadership(options.identity, this.timings);
    this.now = options.now ?? Date.now;
  }

  get isLeader(): boolean {
    return this.state.leading;
  }

  /** The current term (the Lease's leaseTransitions when we took it); null when not leading. */
  get term(): number | null {
    return this.state.term;
  }

  start(): void {
    this.stopped = false;
    void this.tick();
  }

  /** Stops campaigning. `release: false` behaves like a crash: peers wait for the lease to expire. */
  async stop({ release = true }: { release?: boolean } = {}): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.inflight; // a renew racing the release could take the Lease back
    if (this.state.leading && release) {
      await this.release().catch((err: unknown) => this.options.onError?.(err));
    }
    this.stepDown(() => this.state.resign());
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    this.inflight = this.attempt().then(
      () => {
        this.failures = 0;
      },
      (err: unknown) => {
        this.failures++;
        this.options.onError?.(err);
      },
    );
    await this.inflight;
    if (this.stopped) return;
    // A leader, or the holder that stepped down, retries at the retry period whatever happens;
    // another follower that cannot reach the API server backs off, up to the lease duration.
    const { retryMs, leaseDurationMs } = this.timings;
    const delay =
      this.state.urgent || this.failures === 0
        ? retryMs
        : nextDelay(this.failures - 1, { baseMs: retryMs, maxMs: leaseDurationMs });
    this.timer = setTimeout(() => void this.tick(), delay);
    this.timer.unref();
  }

  private async attempt(): Promise<void> {
    this.attempts++;
    const { namespace, name } = this.options;
    let lease: V1Lease | null;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace }).catch((err: unknown) => {
        if (isNotFound(err)) return null;
        throw err;
      });
    } catch (err) {
      this.state.failed();
      throw err;
    }
    const decided = this.state.decide(view(lease, this.timings.leaseDurationMs), this.now());
    if (decided.kind === 'wait') {
      if (decided.lost) this.stepDown(() => true);
      return;
    }
    const floor = this.options.termFloor && decided.kind !== 'renew' ? await this.options.termFloor() : 0;
    const move = termAbove(decided, floor);
    const body = this.leaseBody(lease ?? { metadata: { name, namespace } }, move.term, move.kind === 'renew');
    try {
      if (move.kind === 'create') await this.api.createNamespacedLease({ namespace, body });
      else await this.api.replaceNamespacedLease({ name, namespace, body });
    } catch (err) {
      if (isAlreadyExists(err)) return; // 409: another candidate wrote first
      this.state.failed();
      throw err;
    }
    // Stamped when the write returned: the deadline counts from the renewal that succeeded. (Taken
    // while stop() waited for it, the Lease is then released by stop().)
    const started = this.state.wrote(move.term, this.now());
    this.armDeadline();
    if (started) this.options.onStartedLeading(move.term);
  }

  /** The renew deadline as a timer: it fires even while a renewal hangs. */
  private armDeadline(): void {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    const deadline = this.state.deadline;
    if (deadline === undefined) return;
    this.deadlineTimer = setTimeout(
      () => {
        this.deadlineTimer = undefined;
        if (this.state.expire(this.now())) {
          this.options.onError?.(
            new Error(`no renewal succeeded for ${this.timings.renewDeadlineMs} ms; stepping down`),
          );
          this.stepDown(() => true);
        } else this.armDeadline();
      },
      Math.max(0, deadline - this.now()),
    );
    this.deadlineTimer.unref();
  }

  private stepDown(leave: () => boolean): void {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    if (leave()) this.options.onStoppedLeading();
  }

  private leaseBody(lease: V1Lease, term: number, renewal: boolean): V1Lease {
    const now = new Date(this.now());
    const acquireTime = renewal && lease.spec?.acquireTime ? lease.spec.acquireTime : microTime(now);
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: lease.metadata ?? {},
      spec: {
        holderIdentity: this.options.identity,
        leaseDurationSeconds: Math.ceil(this.timings.leaseDurationMs / 1000),
        // MicroTime strings pass through client-node's serializer untouched.
        acquireTime: acquireTime as unknown as Date,
        renewTime: microTime(now) as unknown as Date,
        leaseTransitions: term,
      },
    };
  }

  /** Hands the Lease back by expiring it, as client-go's ReleaseOnCancel does. */
  private async release(): Promise<void> {
    const { namespace, name, identity } = this.options;
    const lease = await this.api.readNamespacedLease({ name, namespace });
    if (lease.spec?.holderIdentity !== identity) return;
    const body = this.leaseBody(lease, lease.spec.leaseTransitions ?? 0, true);
    body.spec = { ...body.spec, holderIdentity: '', leaseDurationSeconds: 1 };
    await this.api.replaceNamespacedLease({ name, namespace, body });
  }
}

function view(lease: V1Lease | null, defaultDurationMs: number): LeaseView | null {
  if (!lease) return null;
  const spec = lease.spec ?? {};
  return {
    holder: spec.holderIdentity ?? '',
    transitions: spec.leaseTransitions ?? 0,
    version: lease.metadata?.resourceVersion ?? '',
    durationMs: spec.leaseDurationSeconds ? spec.leaseDurationSeconds * 1000 : defaultDurationMs,
  };
}
