// The one error catalogue: every status/code pair of SPEC.md "Errors", used by every route of both
// dialects and by the console. Dialect-specific body shapes are rendered from an ApiError at the
// edge (proxy/errors), never built ad hoc in a route.
import { displayNano } from './money.ts';

export const errorCatalogue = {
  invalid_request: { status: 400, type: 'invalid_request_error' },
  edit_unsupported: { status: 400, type: 'invalid_request_error' },
  invalid_api_key: { status: 401, type: 'authentication_error' },
  billing_currency_unset: { status: 403, type: 'permission_error' },
  forbidden: { status: 403, type: 'permission_error' },
  not_found: { status: 404, type: 'not_found_error' },
  model_not_found: { status: 404, type: 'not_found_error' },
  /** The Responses API: a previous_response_id this account has no stored response for (OpenAI's 400). */
  previous_response_not_found: { status: 400, type: 'invalid_request_error' },
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  request_timeout: { status: 408, type: 'invalid_request_error' },
  request_too_large: { status: 413, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  headers_too_large: { status: 431, type: 'invalid_request_error' },
  insufficient_quota: { status: 429, type: 'insufficient_quota' },
  /** A key's rate limit (issue 34): a throughput limit, never the balance (that is insufficient_quota). */
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  /** Console only: too many failed sign-ins for an email or an address (not an API rate limit). */
  sign_in_throttled: { status: 429, type: 'rate_limit_error' },
  /**
   * A model's fleet is full and this account's fair share of the proxy's queue is used up, or its
   * wait budget ran out (issue 32): retry after Retry-After. Never insufficient_quota (not money).
   */
  model_overloaded: { status: 429, type: 'rate_limit_error' },
  server_error: { status: 500, type: 'server_error' },
  /**
   * A model scaled to zero did not get a ready engine within its coldStartTimeout while the call
   * was held (issue 32): nothing was charged; retry after Retry-After.
   */
  model_cold_start_timeout: { status: 503, type: 'server_error' },
} as const;

export type ErrorCode = keyof typeof errorCatalogue;

export interface ApiErrorOptions {
  /** The request field the error is about, e.g. `messages[0].role`. */
  param?: string;
  /**
   * False marks work already done and billed (SPEC: `x-should-retry: false`). Defaults to false
   * for 429 `insufficient_quota` (a retry cannot help until the balance changes) and true for
   * other 5xx.
   */
  shouldRetry?: boolean;
  /** Seconds to wait before retrying (the `Retry-After` header), for failures that will pass. */
  retryAfterS?: number;
  /**
   * Fields the error body carries beside message, type and code, for a client to act on (a key's
   * budget: `limit_source`, `limit_window`, `resets_at`). Every dialect renders them.
   */
  details?: Readonly<Record<string, string>>;
  cause?: unknown;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly param: string | null;
  readonly shouldRetry: boolean | undefined;
  readonly retryAfterS: number | undefined;
  readonly details: Readonly<Record<string, string>> | undefined;

  constructor(code: ErrorCode, message: string, options: ApiErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiError';
    this.code = code;
    this.status = errorCatalogue[code].status;
    this.type = errorCatalogue[code].type;
    this.param = options.param ?? null;
    this.shouldRetry = options.shouldRetry ?? (code === 'insufficient_quota' ? false : undefined);
    this.retryAfterS = options.retryAfterS;
    this.details = options.details;
  }
}

export const invalidRequest = (message: string, param?: string) =>
  new ApiError('invalid_request', message, param === undefined ? {} : { param });

export const modelNotFound = (model: string) =>
  new ApiError('model_not_found', `The model '${model}' does not exist or you do not have access to it.`, {
    param: 'model',
  });

export const invalidApiKey = () =>
  new ApiError(
    'invalid_api_key',
    'Incorrect API key provided. Check for a stray space or newline in the pasted key.',
  );

/** A key that worked once: rotated away or deleted (only its real holder can see this message). */
export const retiredApiKey = () =>
  new ApiError(
    'invalid_api_key',
    'This API key was rotated or deleted. Use the current key from the console (API Management).',
  );

export const billingCurrencyUnset = () =>
  new ApiError(
    'billing_currency_unset',
    'This account has no billing currency. Set the country in your profile.',
  );

export const insufficientQuota = () =>
  new ApiError(
    'insufficient_quota',
    'Your credit balance is too low for this request. Top up credits in the console billing page. This is not a rate limit.',
  );

const BUDGET_WORDS = {
  day: { limit: 'daily', spent: 'today' },
  week: { limit: 'weekly', spent: 'this week' },
  month: { limit: 'monthly', spent: 'this month' },
} as const;

/**
 * A key's spend limit (its budget for a UTC day, week or month) cannot cover the call, while the
 * balance could: the message names the key's limit, so whoever holds this key knows it was this
 * key's cap, not the account's credit. Amounts in nano-units of `currency`; `held` is what the
 * key's running calls hold. Still `insufficient_quota` (money, not throughput: x-should-retry
 * false, as no retry within the period can pass), with the period's end in the body (`resets_at`,
 * RFC 3339 UTC) and whose budget it was (`limit_source`), as OpenRouter's budgets answer, so a
 * client can wait for the reset or switch keys.
 */
export const keySpendLimitReached = (
  k: {
    limit: number;
    spent: number;
    held: number;
    window: keyof typeof BUDGET_WORDS;
    resetsAt: number;
    /** The account's budget across all its keys (issue 34) rather than the key's own. */
    source?: 'key' | 'account';
  },
  currency: string | null,
) => {
  const unit = currency === null ? '' : ` ${currency}`;
  const running = k.held > 0 ? `, ${displayNano(k.held)}${unit} held by its calls in progress` : '';
  const words = BUDGET_WORDS[k.window];
  const resetsAt = new Date(k.resetsAt).toISOString().replace('.000Z', 'Z');
  const account = k.source === 'account';
  const whose = account ? "This account's" : "This API key's";
  const act = account
    ? 'An owner of the account can raise its budget in the console.'
    : "Raise the key's limit in the console, or use another key.";
  return new ApiError(
    'insufficient_quota',
    `${whose} ${words.limit} spend limit of ${displayNano(k.limit)}${unit} is reached (${displayNano(k.spent)}${unit} spent ${words.spent}${running}). It resets at ${resetsAt}. ${act}`,
    {
      details: { limit_source: account ? 'account' : 'key', limit_window: k.window, resets_at: resetsAt },
    },
  );
};

const RATE_LIMIT_WORDS = {
  requestsPerMinute: 'requests per minute',
  inputTokensPerMinute: 'input tokens per minute',
  outputTokensPerMinute: 'output tokens per minute',
  concurrentCalls: 'calls at once',
} as const;

/**
 * A key's rate limit refused the call (issue 34): the message names the limit, and Retry-After
 * says when a retry passes (the SDKs' own retry waits for it). Nothing was held or charged.
 */
export const rateLimitExceeded = (r: {
  limit: keyof typeof RATE_LIMIT_WORDS;
  value: number;
  retryAfterMs: number;
}) =>
  new ApiError(
    'rate_limit_exceeded',
    `This API key's rate limit of ${r.value} ${RATE_LIMIT_WORDS[r.limit]} is reached. Retry after ${Math.max(1, Math.ceil(r.retryAfterMs / 1000))} s, or ask an owner of the account to raise the limit.`,
    { retryAfterS: Math.max(1, Math.ceil(r.retryAfterMs / 1000)) },
  );

/** The proxy cannot bill right now (settlements are not reaching Redis): retry shortly. */
export const billingUnavailable = () =>
  new ApiError(
    'server_error',
    'Billing is unavailable right now, so no billable call can be served. Retry shortly.',
    { retryAfterS: 1 },
  );

/** Redis did not answer in time or is out of reach (a hung or dead Redis): retry shortly. */
export const storeUnavailable = () =>
  new ApiError(
    'server_error',
    'The data store is not answering right now, so the call could not be served. Retry shortly.',
    { retryAfterS: 1 },
  );

/** Redis is not the one the proxy knew (it lost its data): nothing is served until it is restored. */
export const storeLostData = () =>
  new ApiError(
    'server_error',
    'The data store lost its data and is being restored, so no call can be served. Retry later.',
    { retryAfterS: 5 },
  );

/** The proxy is shutting down: retry on another replica. */
export const shuttingDown = () =>
  new ApiError('server_error', 'The server is restarting. Retry the request.', { retryAfterS: 1 });

export const isApiError = (err: unknown): err is ApiError => err instanceof ApiError;
