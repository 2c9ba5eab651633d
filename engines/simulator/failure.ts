// Failure injection. A request header makes a failure deterministic for tests:
//   x-sim-fail: before-first-byte  → HTTP 500 with an OpenAI error body, nothing streamed
//   x-sim-fail: reset              → connection destroyed before any response byte
//   x-sim-fail: mid-stream         → response cut (connection destroyed) about halfway through
//   x-sim-fail: error-frame        → (streams) an in-band `data: {"error":…}` frame halfway, then [DONE]
//   x-sim-fail: none               → no failure, whatever the configured probabilities
// Without the header, failBeforeFirstByte / failMidStream are probabilities drawn per request.

import { badRequest } from './http.ts';
import type { FailureMode } from './metrics.ts';

export type RequestFailure = Exclude<FailureMode, 'video'> | null;

const HEADER_MODES = new Set(['before-first-byte', 'reset', 'mid-stream', 'error-frame', 'none']);

export function chooseFailure(
  header: string | undefined,
  probabilities: { failBeforeFirstByte: number; failMidStream: number },
  random: () => number = Math.random,
): RequestFailure {
  if (header !== undefined) {
    const mode = header.trim().toLowerCase();
    if (!HEADER_MODES.has(mode)) {
      throw badRequest(`x-sim-fail must be one of ${[...HEADER_MODES].join(', ')}`, 'x-sim-fail');
    }
    return mode === 'none' ? null : (mode as RequestFailure);
  }
  if (probabilities.failBeforeFirstByte > 0 && random() < probabilities.failBeforeFirstByte) {
    return 'before-first-byte';
  }
  if (probabilities.failMidStream > 0 && random() < probabilities.failMidStream) return 'mid-stream';
  return null;
}

/** Whether a video job should end `failed`: header `x-sim-fail: video` forces it, `none` prevents it. */
export function chooseVideoFailure(header: string | undefined, probability: number): boolean {
  if (header !== undefined) {
    const mode = header.trim().toLowerCase();
    if (mode !== 'video' && mode !== 'none')
      throw badRequest('x-sim-fail on /v1/videos must be video or none', 'x-sim-fail');
    return mode === 'video';
  }
  return probability > 0 && Math.random() < probability;
}
