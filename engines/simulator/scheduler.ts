// Admission control like an engine's scheduler: at most maxConcurrency requests run at once, the rest
// wait in FIFO order. A waiter whose client goes away leaves the queue. Counts are kept per model for
// the vLLM gauges.

interface Waiter {
  model: string;
  admit: () => void;
}

export class Scheduler {
  private readonly queue: Waiter[] = [];
  private runningTotal = 0;
  private peak = 0;
  readonly running = new Map<string, number>();
  readonly waiting = new Map<string, number>();
  /** Tokens held by running sequences (prompt + generated so far), for the KV-cache usage gauge. */
  kvTokens = 0;

  constructor(private readonly limit: () => number) {}

  get totalRunning(): number {
    return this.runningTotal;
  }
  get totalWaiting(): number {
    return this.queue.length;
  }
  get peakRunning(): number {
    return this.peak;
  }

  /** Resolves with a release function once the request may run; rejects if the signal aborts first. */
  acquire(model: string, signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.queue.length === 0 && this.runningTotal < this.limit()) {
      return Promise.resolve(this.start(model));
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        model,
        admit: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.start(model));
        },
      };
      const onAbort = () => {
        const i = this.queue.indexOf(waiter);
        if (i >= 0) {
          this.queue.splice(i, 1);
          bump(this.waiting, model, -1);
        }
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
      bump(this.waiting, model, 1);
    });
  }

  /** Admits waiters while there is room; call after the limit changes. */
  drain(): void {
    while (this.queue.length > 0 && this.runningTotal < this.limit()) {
      const next = this.queue.shift()!;
      bump(this.waiting, next.model, -1);
      next.admit();
    }
  }

  private start(model: string): () => void {
    this.runningTotal++;
    this.peak = Math.max(this.peak, this.runningTotal);
    bump(this.running, model, 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.runningTotal--;
      bump(this.running, model, -1);
      this.drain();
    };
  }
}

function bump(map: Map<string, number>, key: string, by: number): void {
  map.set(key, (map.get(key) ?? 0) + by);
}
