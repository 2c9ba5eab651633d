// What an API refusal means to a person, and what to do about it (issue 19 item 6): the API's own
// message stays available below the words, for whoever needs the detail. A 429 has four causes a
// person acts on differently (issue 48 item 7): the key's spend limit, the account's budget (both
// `insufficient_quota` with a `limit_source`), a rate limit, and the credit being used up; each is
// headed with its own cause, never the credit's when the balance is fine.
import { CallError, type RefusalFacts } from './calls.ts';

const PERIOD = { day: 'daily', week: 'weekly', month: 'monthly' } as const;

/** "resets at 2026-12-03 00:00 UTC" from a budget's `resets_at`, or nothing when it has none. */
const resets = (f: RefusalFacts) =>
  f.resetsAt ? ` It resets at ${f.resetsAt.replace('T', ' ').replace(/:00(\.000)?Z$/, ' UTC')}.` : '';

const wait = (f: RefusalFacts) =>
  f.retryAfterS === undefined ? 'Wait a moment' : `Wait ${Math.max(1, f.retryAfterS)} s`;

/** insufficient_quota: a key's limit, the account's budget, or (no limit_source) the credit. */
function quota(f: RefusalFacts, detail: string) {
  const period = PERIOD[f.limitWindow ?? 'month'];
  if (f.limitSource === 'key')
    return {
      title: `This key’s ${period} spend limit is reached.`,
      action: `Raise it with Spend Limit on API Management, or choose another key above.${resets(f)}`,
      detail,
    };
  if (f.limitSource === 'account')
    return {
      title: `The account’s ${period} budget is reached.`,
      action: `An owner raises it under Account budget on the Billing page; every key of the account is held to it.${resets(f)}`,
      detail,
    };
  return {
    title: 'The account’s credit is used up.',
    action: 'Top up on the Billing page, then run again.',
    detail,
  };
}

export function humanError(err: unknown): { title: string; action: string; detail: string } {
  if (!(err instanceof CallError))
    return {
      title: 'The API could not be reached.',
      action:
        'Check that the API endpoint is up and allows this console’s address (PROXY_CORS_ORIGINS), then try again.',
      detail: (err as Error)?.message ?? String(err),
    };
  const detail = `${err.status} ${err.code ?? ''}: ${err.message}`;
  switch (err.code) {
    case 'insufficient_quota':
      return quota(err.facts, detail);
    case 'rate_limit_exceeded':
      return {
        title: 'This key’s rate limit is reached.',
        action: `${wait(err.facts)} and run again, or raise the key’s Limits on API Management (an owner can).`,
        detail,
      };
    case 'model_overloaded':
      return {
        title: 'The model is busy: the account’s share of its queue is used up.',
        action: `${wait(err.facts)} and run again.`,
        detail,
      };
    case 'model_not_found':
      return {
        title: 'This model is not available to the account.',
        action: 'Pick another model; an invite-only model needs access granted first.',
        detail,
      };
    case 'billing_currency_unset':
      return {
        title: 'The account has no billing currency yet.',
        action: 'An owner sets the country on the Profile page; calls work from then on.',
        detail,
      };
    case 'invalid_api_key':
      return {
        title: 'The chosen key no longer works (rotated or deleted).',
        action: 'Choose another key above, or make one on API Management.',
        detail,
      };
    case 'edit_unsupported':
      return { title: 'This model cannot edit images.', action: 'Pick an edit-capable model.', detail };
    default:
      if (err.status === 200)
        return {
          title: 'The model failed part-way through its reply.',
          action: 'What arrived is shown; run again to retry.',
          detail,
        };
      if (err.status === 401)
        return { title: 'The key was refused.', action: 'Choose another key above.', detail };
      if (err.status === 429)
        return { title: 'Too many calls at once.', action: `${wait(err.facts)} and run again.`, detail };
      if (err.status >= 500)
        return { title: 'The service failed to answer.', action: 'Run again in a moment.', detail };
      return { title: 'The API refused the call.', action: 'Fix what the message below names.', detail };
  }
}
