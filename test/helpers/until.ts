// Waiting for something asynchronous to become true in a test: polls `check` every few
// milliseconds (at least `ms` in all, two seconds unless told), then fails the test with `what` if
// it never held. `check` may itself ask a server (a Redis read).
import { expect } from 'vitest';

export async function until(
  check: () => boolean | Promise<boolean>,
  what = 'the awaited condition',
  ms = 2_000,
): Promise<void> {
  for (let i = 0; i < ms / 5 && !(await check()); i++) await new Promise((r) => setTimeout(r, 5));
  expect(await check(), `${what} never held`).toBe(true);
}
