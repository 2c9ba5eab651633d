// Publishes this replica's demand board to Redis (core/demand/demand.ts) every interval, and at once when
// a cold model gets its first held request (the scaler should not wait an interval to wake it).
// The hash expires after a few intervals, so a replica that dies stops counting by itself. A
// failed publish is only logged: the next interval tries again, and demand is advisory.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { DemandStore } from '../../core/demand/demand.ts';
import type { DemandBoard } from './board.ts';

export interface DemandPublisherOptions {
  intervalMs: number;
  /** The hash's TTL; a few intervals, so one slow publish does not drop the replica's demand. */
  ttlMs?: number;
  proxyId?: string;
  onError?: (err: unknown) => void;
}

export class DemandPublisher {
  readonly proxyId: string;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private again = false;
  private readonly unlisten: () => void;

  constructor(
    private readonly store: DemandStore,
    private readonly board: DemandBoard,
    private readonly options: DemandPublisherOptions,
  ) {
    this.proxyId = options.proxyId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    this.unlisten = board.onFirstHeld(() => void this.publish());
  }

  start(): void {
    this.timer = setInterval(() => void this.publish(), this.options.intervalMs);
    this.timer.unref();
  }

  /** One publish; a call while one runs makes exactly one more after it (the newest counts). */
  publish(): Promise<void> {
    if (this.running !== null) {
      this.again = true;
      return this.running;
    }
    this.running = this.store
      .publish(this.proxyId, this.board.snapshot(), this.options.ttlMs ?? this.options.intervalMs * 3)
      .catch((err: unknown) => this.options.onError?.(err))
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          void this.publish();
        }
      });
    return this.running;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.unlisten();
    await this.running;
    await this.store.withdraw(this.proxyId).catch((err: unknown) => this.options.onError?.(err));
  }
}
