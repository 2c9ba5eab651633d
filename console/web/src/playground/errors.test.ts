// The words a refusal is headed with (issue 48 item 7): each 429 by its own cause, read from the
// error body's limit_source, limit_window and resets_at and the Retry-After header, as the proxy
// sends them (core/errors.ts keySpendLimitReached, rateLimitExceeded, insufficientQuota).
import { describe, expect, it } from 'vitest';
import {
  type ApiError,
  insufficientQuota,
  keySpendLimitReached,
  rateLimitExceeded,
} from '../../../../core/errors.ts';
import { openAiErrorBody } from '../../../../http/openai-error-body.ts';
import { CallError, refusalFacts } from './calls.ts';
import { humanError } from './errors.ts';

/** The CallError the Playground makes of an ApiError as the proxy answers it. */
const asReceived = (err: ApiError) => {
  const body = openAiErrorBody(err).error;
  return new CallError(
    body.message,
    err.status,
    body.code,
    refusalFacts(body, err.retryAfterS === undefined ? null : String(err.retryAfterS)),
  );
};
const resetsAt = Date.parse('2026-12-03T00:00:00Z');

describe('a refusal headed with its real cause', () => {
  it("a key's spend limit names the key's limit and its window, not the credit", () => {
    const e = humanError(
      asReceived(keySpendLimitReached({ limit: 0, spent: 0, held: 0, window: 'month', resetsAt }, 'USD')),
    );
    expect(e.title).toBe('This key’s monthly spend limit is reached.');
    expect(e.action).toBe(
      'Raise it with Spend Limit on API Management, or choose another key above. It resets at 2026-12-03 00:00 UTC.',
    );
  });

  it("the account's budget names the budget and who can raise it", () => {
    const e = humanError(
      asReceived(
        keySpendLimitReached(
          { limit: 0, spent: 0, held: 0, window: 'day', resetsAt, source: 'account' },
          'USD',
        ),
      ),
    );
    expect(e.title).toBe('The account’s daily budget is reached.');
    expect(e.action).toMatch(/^An owner raises it under Account budget on the Billing page/);
  });

  it('a rate limit says how long to wait, from Retry-After', () => {
    const e = humanError(
      asReceived(rateLimitExceeded({ limit: 'requestsPerMinute', value: 1, retryAfterMs: 41_500 })),
    );
    expect(e.title).toBe('This key’s rate limit is reached.');
    expect(e.action).toMatch(/^Wait 42 s and run again/);
  });

  it('only a refusal without a limit source is the credit being used up', () => {
    expect(humanError(asReceived(insufficientQuota())).title).toBe('The account’s credit is used up.');
  });
});
