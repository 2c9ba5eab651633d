// Retry delays for everything that talks to the API server: exponential from a base, capped, with
// up to a fifth taken off at random so replicas that failed together do not retry together. The
// count of failures in a row is reset only by evidence of success — a list that returned, an event
// that arrived, a watch that stayed up — never by merely having tried again.

export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  /** 0..1, for tests; Math.random by default. */
  random?: () => number;
}

/** The delay before retry number `failures` (0 for the first retry). */
export function nextDelay(failures: number, { baseMs, maxMs, random = Math.random }: BackoffOptions): number {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.min(failures, 30));
  return Math.round(exp * (1 - 0.2 * random()));
}

/** Failures in a row, forgiven when the run since the last restart lasted `healthyMs` (a watch that was up). */
export class FailureCount {
  private failures = 0;
  private runningSince = 0;

  constructor(private readonly healthyMs: number) {}

  /** A retry began at `now`. */
  restarted(now: number): void {
    this.runningSince = now;
  }

  /** Records a failure at `now` and returns how many came before it (for nextDelay). */
  fail(now: number): number {
    if (this.failures > 0 && now - this.runningSince >= this.healthyMs) this.failures = 0;
    return this.failures++;
  }

  /** Something worked: the next failure starts from the base delay again. */
  succeed(): void {
    this.failures = 0;
  }

  get count(): number {
    return this.failures;
  }
}
