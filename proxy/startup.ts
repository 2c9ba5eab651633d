// The proxy's first Redis steps at start-up, retried (issue 48 item 12). A replica whose first
// commands time out used to exit with nothing but "Command timed out": a pod is restarted by its
// kubelet, but `make dev` is not, so on a loaded machine the whole platform stopped. Each step is
// named; a step that fails because Redis is out of reach or slow (core/redis/unavailable.ts) is
// tried again with a doubling back-off for up to PROXY_STARTUP_REDIS_RETRY_MS, each retry logged;
// past it, the error names the step, what it met, and the setting that would have let it pass.
// Any other failure (a wrong Redis, an evicting one) is not retried: trying again cannot help.
import { isRedisUnavailable } from '../core/redis/unavailable.ts';

export interface StartupTimeouts {
  /** REDIS_COMMAND_TIMEOUT_MS: how long one command may wait. */
  commandTimeoutMs: number;
  /** PROXY_STARTUP_REDIS_RETRY_MS: how long the start-up keeps trying a step. */
  retryMs: number;
}

/** The wait before retry `n` (1-based): 250 ms doubling, at most 5 s. */
export const startupBackoffMs = (n: number): number => Math.min(5_000, 250 * 2 ** (n - 1));

/** What a failed step's error says: the step, the cause, and the setting that bounds it. */
export function startupFailure(step: string, err: unknown, t: StartupTimeouts, tries: number): string {
  const cause = err instanceof Error ? err.message : String(err);
  const timedOut = cause === 'Command timed out';
  const hint = timedOut
    ? `Redis did not answer one command within REDIS_COMMAND_TIMEOUT_MS (${t.commandTimeoutMs} ms); raise it where Redis or this machine is slow`
    : 'Redis was out of reach';
  const after = tries > 1 ? `, tried ${tries} times over PROXY_STARTUP_REDIS_RETRY_MS (${t.retryMs} ms)` : '';
  return `the proxy's start-up step "${step}" failed: ${cause} (${hint}${after})`;
}

/**
 * Runs `run` until it succeeds, retrying a Redis-unavailable failure with back-off until
 * `t.retryMs` has passed; `onRetry` hears each failure retried. Rejects with an Error whose
 * message is startupFailure's (the last failure as its cause).
 */
export async function startupStep<T>(
  step: string,
  run: () => Promise<T>,
  t: StartupTimeouts,
  onRetry: (message: string, inMs: number) => void,
): Promise<T> {
  const until = performance.now() + t.retryMs;
  for (let tries = 1; ; tries++) {
    try {
      return await run();
    } catch (err) {
      const wait = startupBackoffMs(tries);
      if (!isRedisUnavailable(err) || performance.now() + wait > until)
        throw new Error(startupFailure(step, err, t, tries), { cause: err });
      onRetry(startupFailure(step, err, t, 1), wait);
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
