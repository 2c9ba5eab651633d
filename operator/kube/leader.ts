// Leader election on a coordination.k8s.io/v1 Lease, written by hand (client-node has none): the
// holder renews every renewMs; anyone may take a Lease whose renewTime + leaseDuration has passed.
// Every write carries the resourceVersion we read, so two candidates cannot both win: the loser
// gets 409. A leader that cannot renew within 2/3 of the lease duration steps down on its own,
// before anyone else can take over. On stop the leader releases the Lease so a peer takes over at once.
import { CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import { isAlreadyExists, isNotFound, type KubeClient } from './client.ts';

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationSeconds?: number;
  renewMs?: number;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
  onError?: (err: unknown) => void;
}

/** MicroTime wants exactly six fractional digits; client-node would send Date's three. */
export const microTime = (d: Date) => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

export class LeaderElector {
  private readonly api: CoordinationV1Api;
  private timer: NodeJS.Timeout | undefined;
  private leading = false;
  private lastRenew = 0;
  private stopped = false;
  private inflight: Promise<void> | undefined;

  constructor(
    kube: KubeClient,
    private readonly options: LeaderElectionOptions,
  ) {
    this.api = kube.kubeConfig.makeApiClient(CoordinationV1Api);
  }

  get isLeader(): boolean {
    return this.leading;
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
    if (this.leading && release) {
      await this.release().catch((err: unknown) => this.options.onError?.(err));
    }
    this.setLeading(false);
  }

  private get durationS(): number {
    return this.options.leaseDurationSeconds ?? 15;
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    this.inflight = this.tryAcquireOrRenew().catch((err: unknown) => this.options.onError?.(err));
    await this.inflight;
    // Could not renew for 2/3 of the lease (client-go's renew deadline): step down before a peer
    // may take over, so two leaders never overlap.
    if (this.leading && Date.now() - this.lastRenew > (this.durationS * 1000 * 2) / 3) this.setLeading(false);
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), this.options.renewMs ?? 2_000);
    this.timer.unref();
  }

  private async tryAcquireOrRenew(): Promise<void> {
    const { namespace, name, identity } = this.options;
    const now = new Date();
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        await this.api.createNamespacedLease({
          namespace,
          body: this.leaseBody({ metadata: { name, namespace } }, now, 0),
        });
        this.won(now);
      } catch (createErr) {
        if (!isAlreadyExists(createErr)) throw createErr;
      }
      return;
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const renewed = spec.renewTime ? new Date(spec.renewTime as unknown as string).getTime() : 0;
    const expired = renewed + (spec.leaseDurationSeconds ?? this.durationS) * 1000 < now.getTime();
    if (holder !== identity && holder !== '' && !expired) {
      if (this.leading) this.setLeading(false);
      return;
    }
    const transitions = (spec.leaseTransitions ?? 0) + (holder === identity ? 0 : 1);
    try {
      await this.api.replaceNamespacedLease({
        name,
        namespace,
        body: this.leaseBody(lease, now, transitions, holder === identity),
      });
      this.won(now);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err; // 409: another candidate wrote first
    }
  }

  private won(now: Date): void {
    this.lastRenew = now.getTime();
    if (!this.leading) this.setLeading(true);
  }

  private leaseBody(lease: V1Lease, now: Date, transitions: number, keepAcquire = false): V1Lease {
    const acquireTime = keepAcquire && lease.spec?.acquireTime ? lease.spec.acquireTime : microTime(now);
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: lease.metadata ?? {},
      spec: {
        holderIdentity: this.options.identity,
        leaseDurationSeconds: this.durationS,
        // MicroTime strings pass through client-node's serializer untouched.
        acquireTime: acquireTime as unknown as Date,
        renewTime: microTime(now) as unknown as Date,
        leaseTransitions: transitions,
      },
    };
  }

  /** Hands the Lease back by expiring it, as client-go's ReleaseOnCancel does. */
  private async release(): Promise<void> {
    const { namespace, name, identity } = this.options;
    const lease = await this.api.readNamespacedLease({ name, namespace });
    if (lease.spec?.holderIdentity !== identity) return;
    const body = this.leaseBody(lease, new Date(), lease.spec.leaseTransitions ?? 0, true);
    body.spec = { ...body.spec, holderIdentity: '', leaseDurationSeconds: 1 };
    await this.api.replaceNamespacedLease({ name, namespace, body });
  }

  private setLeading(value: boolean): void {
    if (this.leading === value) return;
    this.leading = value;
    if (value) this.options.onStartedLeading();
    else this.options.onStoppedLeading();
  }
}
