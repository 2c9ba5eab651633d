// One engine call with bounded failover: pick an endpoint (picker), POST, and if the engine fails
// before its first byte (connection refused, timeout, 5xx) record it against the endpoint's health
// and try another endpoint, up to `attempts`. A 4xx is the caller's fault and is returned, not
// retried. The caller owns the returned body and must call `release` when done with it.

import type { Readable } from 'node:stream';
import type { CatalogueEntry } from '../../core/catalogue/index.ts';
import { ApiError } from '../../core/errors.ts';
import type { DemandBoard } from '../demand/board.ts';
import type { ColdHold } from '../demand/cold-hold.ts';
import type { FairQueue } from '../demand/fair-queue.ts';
import type { ProxyMetrics } from '../metrics/metrics.ts';
import { failed, type RequestTrace } from '../tracing/tracing.ts';
import type { Cancel } from './cancel.ts';
import type { EngineClient, EngineResponse } from './client.ts';
import type { EngineHealth } from './health.ts';
import type { EndpointScore, PrefixRouting } from './kv-index/prefix-routing.ts';
import type { EndpointPicker } from './picker.ts';

export interface EngineDeps {
  client: EngineClient;
  picker: EndpointPicker;
  /** Prefix-cache routing from the engines' KV events (off: PROXY_ROUTING_KV_EVENTS=false). */
  routing?: PrefixRouting;
  health: EngineHealth;
  metrics: ProxyMetrics;
  attempts: number;
  /** Per-model demand (in the engine, held for a cold start) the operator scales on (issue 32). */
  demand?: DemandBoard;
  /** Holds a call for a scaled-to-zero model until it has an endpoint (../demand/cold-hold.ts). */
  hold?: ColdHold;
  /** Admits calls of a model whose entry sets `queue`, fairly per account (../demand/fair-queue.ts). */
  queue?: FairQueue;
}

export interface EngineCall extends EngineResponse {
  url: string;
  /** ms (performance.now) when the request was sent and when its headers came back. */
  sentAt: number;
  headersAt: number;
  /** Frees the endpoint's in-flight slot; idempotent. */
  release: () => void;
}

export interface CallOptions {
  entry: CatalogueEntry;
  path: string;
  /** JSON, or a multipart form made afresh for each attempt (a stream is read once). */
  payload: string | (() => { stream: Readable; contentType: string });
  cancel: Cancel;
  affinityKey?: string;
  /** Prefix-cache routing's endpoint score, when it has one for this request. */
  score?: EndpointScore;
  /** Endpoints already tried by this request; grows as endpoints fail. */
  tried: Set<string>;
  /** The request's trace (tracing on only): each attempt is a span, its traceparent sent along. */
  trace?: RequestTrace;
  /** Runs when the call is held for a cold model (a streamed call starts its keep-alives). */
  onHeld?: () => void;
  /** Whose call it is, and its request's size: its place in a full model's fair queue. */
  account?: string;
  bytes?: number;
}

export const noEngine = (model: string, cause?: unknown) =>
  new ApiError('server_error', `No engine could serve model '${model}' right now. Try again shortly.`, {
    cause,
    retryAfterS: 1,
  });

/**
 * A catalogued model with no ready engine (starting, restarting, scaled to zero): retryable, with
 * Retry-After — a 404 here would read as a typo to the SDKs, which never retry it.
 */
export const noReadyEngine = (model: string) =>
  new ApiError(
    'server_error',
    `The model '${model}' has no engine ready right now (it is starting or restarting). Retry shortly.`,
    { retryAfterS: 2 },
  );

export async function callEngine(deps: EngineDeps, o: CallOptions): Promise<EngineCall> {
  // Checked before awaiting anything: a warm model's call takes no extra turn of the event loop.
  const entry = deps.hold?.holds(o.entry) ? await deps.hold.ready(o.entry, o.cancel, o.onHeld) : o.entry;
  if (entry.endpoints.length === 0) throw noReadyEngine(entry.id);
  const urls = entry.endpoints.map((e) => e.url);
  if (deps.queue === undefined || entry.queue === undefined || o.account === undefined)
    return sendToEngine(deps, o, urls);
  const slot = await deps.queue.admit(
    { model: entry.id, endpoints: urls.length, limits: entry.queue, account: o.account, bytes: o.bytes ?? 0 },
    o.cancel,
  );
  try {
    // After a wait, to the endpoints the catalogue has now: the slot may be a new endpoint's.
    const now = deps.queue.current(entry);
    const call = await sendToEngine(deps, o, now === entry ? urls : now.endpoints.map((e) => e.url));
    return { ...call, release: counted(call.release, slot) };
  } catch (err) {
    slot();
    throw err;
  }
}

/** The attempts over the endpoints, failing over before the first byte. */
async function sendToEngine(deps: EngineDeps, o: CallOptions, urls: string[]): Promise<EngineCall> {
  const maxTried = Math.min(deps.attempts, urls.length);
  let lastError: unknown;
  while (o.tried.size < maxTried) {
    const url = deps.picker.pick(urls, { affinityKey: o.affinityKey, exclude: o.tried, score: o.score });
    if (url === null) break;
    o.tried.add(url);
    const release = counted(deps.picker.acquire(url), deps.demand?.enter(o.entry.id, 'inFlight'));
    const traced = o.trace?.engine(o.entry.kind, o.entry.id, url);
    const sentAt = performance.now();
    try {
      const res =
        typeof o.payload === 'string'
          ? await deps.client.postJson(url, o.path, o.payload, o.cancel, traced?.headers)
          : await deps.client.send(url, 'POST', o.path, o.payload(), o.cancel, traced?.headers);
      traced?.span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode < 500) {
        deps.health.recordSuccess(url);
        return {
          statusCode: res.statusCode,
          body: res.body,
          url,
          sentAt,
          headersAt: performance.now(),
          // The engine span lasts until its body is read (the whole answer, or the whole stream).
          release: traced === undefined ? release : endingSpan(traced.span, release),
        };
      }
      lastError = new Error(`engine ${url} answered ${res.statusCode}`);
      if (traced !== undefined) {
        failed(traced.span, lastError);
        traced.span.end();
      }
      deps.metrics.engineErrors.inc({ model: o.entry.id, kind: 'status' });
      await res.body.dump().catch(() => {});
    } catch (err) {
      release();
      if (traced !== undefined) {
        failed(traced.span, err);
        traced.span.end();
      }
      if (o.cancel.aborted) throw o.cancel.reason ?? err;
      lastError = err;
      deps.metrics.engineErrors.inc({ model: o.entry.id, kind: errorKind(err) });
    }
    release();
    deps.health.recordFailure(url);
  }
  throw noEngine(o.entry.id, lastError);
}

/** Maps an engine 4xx to the client's error: the engine's message is about the client's input. */
export async function engineClientError(call: EngineCall, model: string): Promise<ApiError> {
  const text = await call.body.text().catch(() => '');
  let error: unknown;
  try {
    const parsed = JSON.parse(text) as { error?: unknown; message?: unknown };
    error = parsed.error ?? parsed;
  } catch {
    // Not JSON: keep the generic message rather than echo an engine's raw body.
  }
  // A 404 from the engine means our catalogue points at an engine without the model: our fault.
  if (call.statusCode === 404) return noEngine(model, new Error(refusalOf(error, call.statusCode).message));
  return refusalOf(error, call.statusCode);
}

/**
 * The client's error for an engine's refusal inside a stream: vLLM checks some parameters only
 * after its 200 head (out-of-vocabulary `stop_token_ids` or `logit_bias`, a bad grammar) and sends
 * `{"error": {message, type: "BadRequestError", param, code: 400}}` as the first frame. A `code`
 * that is a 4xx status (404 aside: a model missing from an engine is our catalogue's fault) makes
 * it the client's fault, answered like the same refusal as a status; anything else is null (an
 * engine failure).
 */
export function streamRefusal(error: unknown): ApiError | null {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'number' || code < 400 || code > 499 || code === 404) return null;
  return refusalOf(error, code);
}

/** An engine's error object ({message, param}) as the client's invalid_request. */
function refusalOf(error: unknown, status: number): ApiError {
  const e = (typeof error === 'object' && error !== null ? error : {}) as {
    message?: unknown;
    param?: unknown;
  };
  const message =
    typeof e.message === 'string' && e.message.length > 0
      ? e.message
      : `The engine rejected the request (${status}).`;
  return new ApiError('invalid_request', message, typeof e.param === 'string' ? { param: e.param } : {});
}

function errorKind(err: unknown): string {
  const code = (err as { code?: string } | null)?.code ?? '';
  if (code.includes('TIMEOUT')) return 'timeout';
  return 'connect';
}

/** A release that also runs `leave` (the model's in-flight demand, a fair-queue slot). */
function counted(release: () => void, leave: (() => void) | undefined): () => void {
  if (leave === undefined) return release;
  return () => {
    release();
    leave();
  };
}

/** `release`, which also ends the attempt's span the first time (release is idempotent). */
function endingSpan(span: { end(): void }, release: () => void): () => void {
  let open = true;
  return () => {
    if (open) span.end();
    open = false;
    release();
  };
}
