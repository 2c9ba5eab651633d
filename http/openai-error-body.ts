// The chat-completions dialect's error body, the shape the official OpenAI SDKs parse:
// {"error":{"message","type","param","code"}}. The same object is the payload of an in-band stream
// error frame (`data: {"error":{...}}`), which openai-node's Stream raises as an APIError.
import type { ApiError } from '../core/errors.ts';

export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string; [detail: string]: unknown };
}

/** The error's details (a budget's limit_source, resets_at, …) ride beside its code. */
export function openAiErrorBody(err: ApiError): OpenAiErrorBody {
  return {
    error: { message: err.message, type: err.type, param: err.param, code: err.code, ...err.details },
  };
}
