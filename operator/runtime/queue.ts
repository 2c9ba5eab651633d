// A keyed work queue (after pepr's queue and client-go's workqueue): work for one key runs one at a
// time; an enqueue while it runs coalesces into one more run afterwards; a failure retries that key
// with exponential backoff, and a success resets it. Different keys run concurrently up to a limit.

export interface KeyedQueueOptions {
  concurrency?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  onError?: (key: string, err: unknown, attempt: number) => void;
}

export class KeyedQueue {
  private readonly pending = new Set<string>();
  private readonly running = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly order: string[] = [];
  private idleWaiters: (() => void)[] = [];
  private stopped = false;

  constructor(
    private readonly work: (key: string) => Promise<void>,
    private readonly options: KeyedQueueOptions = {},
  ) {}

  add(key: string): void {
    if (this.stopped || this.pending.has(key)) return;
    const timer = this.timers.get(key);
    if (timer) {
      // New information beats waiting out a backoff.
      clearTimeout(timer);
      this.timers.delete(key);
    }
    this.pending.add(key);
    this.order.push(key);
    this.pump();
  }

  /** Resolves when nothing is pending, running or waiting to retry (tests). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    this.pending.clear();
    this.order.length = 0;
    this.notifyIdle();
  }

  get size(): number {
    return this.pending.size + this.running.size + this.timers.size;
  }

  private isIdle(): boolean {
    return this.size === 0;
  }

  private pump(): void {
    const limit = this.options.concurrency ?? 4;
    for (let i = 0; i < this.order.length && this.running.size < limit; ) {
      const key = this.order[i]!;
      if (this.running.has(key)) {
        i++;
        continue;
      }
      this.order.splice(i, 1);
      this.pending.delete(key);
      this.running.add(key);
      void this.run(key);
    }
  }

  private async run(key: string): Promise<void> {
    try {
      await this.work(key);
      this.failures.delete(key);
    } catch (err) {
      const attempt = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, attempt);
      this.options.onError?.(key, err, attempt);
      if (!this.stopped && !this.pending.has(key)) this.retryLater(key, attempt);
    } finally {
      this.running.delete(key);
      this.pump();
      this.notifyIdle();
    }
  }

  private retryLater(key: string, attempt: number): void {
    const base = this.options.baseDelayMs ?? 200;
    const max = this.options.maxDelayMs ?? 30_000;
    const delay = Math.min(max, base * 2 ** (attempt - 1));
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, delay);
    timer.unref();
    this.timers.set(key, timer);
  }

  private notifyIdle(): void {
    if (!this.isIdle() && !this.stopped) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
