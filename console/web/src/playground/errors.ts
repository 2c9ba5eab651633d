// What an API refusal means to a person, and what to do about it (issue 19 item 6): the API's own
// message stays available below the words, for whoever needs the detail.
import { CallError } from './calls.ts';

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
      return {
        title: 'The account’s credit is used up.',
        action: 'Top up on the Billing page, then run again.',
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
        return { title: 'Too many calls at once.', action: 'Wait a moment and run again.', detail };
      if (err.status >= 500)
        return { title: 'The service failed to answer.', action: 'Run again in a moment.', detail };
      return { title: 'The API refused the call.', action: 'Fix what the message below names.', detail };
  }
}
