// The error code a failed response carries. A Response's `error.code` is a closed set in the
// openai SDKs' types (ResponseError['code'], 6.x and 7.x alike) — none of it is our catalogue's
// codes but `server_error` — so response.failed carries the SDK's nearest value, while the `error`
// event before it (whose code the SDKs type as any string, and which they raise) carries the
// catalogue's own code, as the chat surface's in-band error does. The message is ours either way.
import type { ErrorCode } from '../../../core/errors.ts';

/** The values of the SDKs' ResponseError['code'] this surface sends. */
export type ResponseErrorCode = 'server_error' | 'rate_limit_exceeded' | 'invalid_prompt';

// Every catalogue code, so a new one must be given its value here (the compiler says so).
const CODES: Record<ErrorCode, ResponseErrorCode> = {
  invalid_request: 'invalid_prompt',
  edit_unsupported: 'invalid_prompt',
  previous_response_not_found: 'invalid_prompt',
  request_too_large: 'invalid_prompt',
  unsupported_media_type: 'invalid_prompt',
  headers_too_large: 'invalid_prompt',
  method_not_allowed: 'invalid_prompt',
  request_timeout: 'invalid_prompt',
  insufficient_quota: 'rate_limit_exceeded',
  sign_in_throttled: 'rate_limit_exceeded',
  model_overloaded: 'rate_limit_exceeded',
  model_cold_start_timeout: 'server_error',
  rate_limit_exceeded: 'rate_limit_exceeded',
  // No value in the set speaks of authentication or access: the stream's own `error` event and the
  // message say which it was (a key rotated mid-stream is `invalid_api_key` there).
  invalid_api_key: 'server_error',
  billing_currency_unset: 'server_error',
  forbidden: 'server_error',
  not_found: 'server_error',
  model_not_found: 'server_error',
  server_error: 'server_error',
};

export const responseErrorCode = (code: ErrorCode): ResponseErrorCode => CODES[code];
