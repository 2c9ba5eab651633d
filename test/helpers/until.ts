// Waiting for something asynchronous to become true in a test: polls `check` every few
// milliseconds for up to two seconds, then fails the test with `what` if it never held.
import { expect } from 'vitest';

export async function until(check: () => boolean, what = 'the awaited condition'): Promise<void> {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check(), `${what} never held`).toBe(true);
}
