// Is Redis answering? One PING at a time on the outbox's connection, every `intervalMs`; a PING
// unanswered after `timeoutMs` counts as a failure but is left to finish. That is what tells a hung
// Redis (stopped, or a partition that resets nothing) from a slow one, and what ends the outage
// fast: the PING sent while Redis was stopped is the first command it answers when it resumes, and
// `onBack` (the outbox retrying at once, instead of after its backoff) runs then — so the first
// call is served again within a round trip, not after the longest backoff (issue 22).
import type { Redis } from 'ioredis';

export interface RedisProbeOptions {
  redis: Redis;
  intervalMs: number;
  timeoutMs: number;
  /** Redis answers again after failing. */
  onBack: () => void;
}

export class RedisProbe {
  /** Since when PINGs fail or go unanswered (Date.now()), or null while Redis answers. */
  private failingSince: number | null = null;
  private inFlight = false;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly o: RedisProbeOptions) {
    this.timer = setInterval(() => this.probe(), o.intervalMs);
    this.timer.unref();
    // A reconnect (a Redis restarted) is news too: no need to wait for the next PING.
    o.redis.on('ready', () => this.probe());
  }

  /** How long Redis has been failing to answer (0 while it answers). */
  failingMs(now = Date.now()): number {
    return this.failingSince === null ? 0 : now - this.failingSince;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private probe(): void {
    if (this.inFlight) return;
    this.inFlight = true;
    const overdue = setTimeout(() => this.failed(), this.o.timeoutMs);
    overdue.unref();
    this.o.redis.ping().then(
      () => {
        clearTimeout(overdue);
        this.inFlight = false;
        if (this.failingSince === null) return;
        this.failingSince = null;
        this.o.onBack();
      },
      () => {
        clearTimeout(overdue);
        this.inFlight = false;
        this.failed();
      },
    );
  }

  private failed(): void {
    this.failingSince ??= Date.now();
  }
}
