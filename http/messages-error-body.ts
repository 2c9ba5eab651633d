// The Messages dialect's error body, the shape the Anthropic SDKs parse:
// {"type":"error","error":{"type","message"},"request_id"}. The type follows the status as
// Anthropic's API names them; SPEC.md's code (invalid_api_key, insufficient_quota, …) rides along
// as `error.code`. The same object is the data of an in-band `event: error` in a stream.
import type { ApiError } from '../core/errors.ts';

export interface MessagesErrorBody {
  type: 'error';
  error: { type: string; message: string; code: string; [detail: string]: unknown };
  request_id: string;
}

export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

export function messagesErrorBody(err: ApiError, requestId: string): MessagesErrorBody {
  return {
    type: 'error',
    error: { type: anthropicErrorType(err.status), message: err.message, code: err.code, ...err.details },
    request_id: requestId,
  };
}
