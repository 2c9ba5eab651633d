// A batch's input read and checked before anything is held (docs/batches.md "Validation"): every
// line a JSON object with a unique custom_id, method POST, the batch's endpoint as url, and a body
// the endpoint's own schema accepts, naming one model (the same on every line) the key may call,
// within the model's limits and not streamed. Any bad line fails the whole batch with OpenAI's
// errors (code, message, param, line), and nothing is charged. Each good line gets its cost
// estimate at the batch price — the most its call can be charged, as the route would hold it — and
// the batch holds their sum. What each endpoint parses with, bounds its output by and is priced as
// is the endpoint table's (core/endpoints.ts, ../calls/endpoints.ts), the routes' own. Pure: the
// model lookup is passed in.
import type { CatalogueEntry, TokenPrice } from '../../core/catalogue/index.ts';
import { ENDPOINTS, type Endpoint } from '../../core/endpoints.ts';
import { ApiError } from '../../core/errors.ts';
import { zodToApiError } from '../../http/validation.ts';
import { chatPromptTokens, embeddingPromptTokens, textQuote } from '../billing/text-quote.ts';
import { ENDPOINT_REQUESTS } from '../calls/endpoints.ts';
import { admitOutput } from '../calls/text-door.ts';

/** A batch's lines are calls to one endpoint of the table. */
export type BatchEndpoint = Endpoint;

export interface BatchLine {
  /** 0-based place in the input. */
  index: number;
  customId: string;
  body: Record<string, unknown>;
  /** The most the line can be charged, at the batch price (nano): what the batch holds for it. */
  estimate: number;
  /** The same bound at the interactive price: the route's own hold, which the line's call may not pass. */
  budget: number;
}

export interface LineError {
  code: string;
  message: string;
  param: string | null;
  /** 1-based line of the input file. */
  line: number | null;
}

export interface ResolvedModel {
  entry: CatalogueEntry;
  /** The batch price in the account's currency. */
  price: TokenPrice;
  /** The interactive price (what the route quotes the call at). */
  routePrice: TokenPrice;
}

export interface InputOptions {
  endpoint: BatchEndpoint;
  maxLines: number;
  defaultMaxTokens: number;
  /** The model a line names, as the key may call it, at the batch price; throws an ApiError otherwise. */
  resolve(model: string, kind: 'chat' | 'embedding'): ResolvedModel;
}

/** Errors past this many are counted, not listed. */
const MAX_ERRORS = 100;

export interface ReadInput {
  lines: BatchLine[];
  errors: LineError[];
  /** The canonical id of the lines' model (null when no line named a callable one). */
  model: string | null;
  estimate: number;
}

/** Reads raw input lines (OpenAI's envelope: custom_id, method, url, body). */
export function readOpenAiInput(text: string, o: InputOptions): ReadInput {
  const raw: { line: number; value: unknown }[] = [];
  const errors: LineError[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const t = lines[i]!.trim();
    if (t === '') continue;
    try {
      raw.push({ line: i + 1, value: JSON.parse(t) });
    } catch {
      errors.push({
        code: 'invalid_json_line',
        message: 'This line is not valid JSON.',
        param: null,
        line: i + 1,
      });
    }
  }
  const envelopes: { line: number; customId: string; body: unknown }[] = [];
  for (const { line, value } of raw) {
    const e = value as { custom_id?: unknown; method?: unknown; url?: unknown; body?: unknown };
    const bad = (code: string, message: string, param: string) => errors.push({ code, message, param, line });
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      bad('invalid_request', 'Each line must be a JSON object.', 'line');
    else if (typeof e.custom_id !== 'string' || e.custom_id === '')
      bad('missing_required_parameter', 'custom_id is required (a string).', 'custom_id');
    else if (e.method !== 'POST') bad('invalid_method', "method must be 'POST'.", 'method');
    else if (e.url !== o.endpoint)
      bad('invalid_url', `url must be the batch's endpoint, '${o.endpoint}'.`, 'url');
    else envelopes.push({ line, customId: e.custom_id, body: e.body });
  }
  const read = readBodies(envelopes, o);
  return {
    ...read,
    errors: [...errors, ...read.errors].sort((a, b) => (a.line ?? 0) - (b.line ?? 0)).slice(0, MAX_ERRORS),
  };
}

/** Checks each line's body and estimates it; the lines keep their input order. */
export function readBodies(
  envelopes: readonly { line: number; customId: string; body: unknown }[],
  o: InputOptions,
): ReadInput {
  const errors: LineError[] = [];
  const lines: BatchLine[] = [];
  const seen = new Set<string>();
  let model: string | null = null;
  let estimate = 0;
  if (envelopes.length > o.maxLines)
    errors.push({
      code: 'too_many_requests',
      message: `A batch takes at most ${o.maxLines} requests; this one has ${envelopes.length}.`,
      param: null,
      line: null,
    });
  for (const { line, customId, body } of envelopes) {
    const bad = (code: string, message: string, param: string | null) =>
      errors.push({ code, message, param, line });
    if (seen.has(customId)) {
      bad('duplicate_custom_id', `custom_id '${customId}' is used by an earlier line.`, 'custom_id');
      continue;
    }
    seen.add(customId);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      bad('missing_required_parameter', 'body is required (a JSON object).', 'body');
      continue;
    }
    const b = body as Record<string, unknown>;
    const schema = ENDPOINT_REQUESTS[o.endpoint];
    const parsed = schema.safeParse(b);
    if (!parsed.success) {
      const err = zodToApiError(parsed.error);
      bad('invalid_request', err.message, err.param === undefined ? null : `body.${err.param}`);
      continue;
    }
    if (b.stream === true) {
      bad('invalid_request', 'Batch requests are not streamed: leave stream out.', 'body.stream');
      continue;
    }
    if (b.background === true) {
      bad('invalid_request', 'Batch requests run in the batch: leave background out.', 'body.background');
      continue;
    }
    try {
      const resolved = o.resolve(String(b.model), ENDPOINTS[o.endpoint].kind);
      if (model !== null && resolved.entry.id !== model) {
        bad(
          'mismatched_model',
          `Every line of a batch uses one model; earlier lines use '${model}'.`,
          'body.model',
        );
        continue;
      }
      model = resolved.entry.id;
      const cost = lineEstimate(o, resolved.entry, resolved.price, b);
      const budget = lineEstimate(o, resolved.entry, resolved.routePrice, b);
      lines.push({ index: lines.length, customId, body: b, estimate: cost, budget });
      estimate += cost;
    } catch (err) {
      if (!(err instanceof ApiError) && !(err instanceof RangeError)) throw err;
      const param = err instanceof ApiError && err.param !== undefined ? `body.${err.param}` : null;
      bad(err instanceof ApiError ? err.code : 'invalid_request', err.message, param);
    }
  }
  if (estimate > Number.MAX_SAFE_INTEGER)
    errors.push({
      code: 'invalid_request',
      message: 'The batch is too large to be paid for.',
      param: null,
      line: null,
    });
  return { lines, errors, model, estimate };
}

/** The most a line can be charged: the route's own hold, at the batch price. */
export function lineEstimate(
  o: InputOptions,
  entry: CatalogueEntry,
  price: TokenPrice,
  b: Record<string, unknown>,
): number {
  const endpoint = ENDPOINTS[o.endpoint];
  if (endpoint.kind === 'embedding') {
    const inputs = Array.isArray(b.input) ? b.input.length : 1;
    return textQuote(price, embeddingPromptTokens(Buffer.byteLength(JSON.stringify(b.input)), inputs), 0).max;
  }
  // The interactive rule (issue 30): over the model's limit a line runs at the limit, or is
  // refused where the Model says `outputLimitPolicy: refuse`; the hold is sized by what runs.
  const perChoice = admitOutput(entry, o.endpoint, b, entry.maxOutputTokens ?? o.defaultMaxTokens).perChoice;
  const n = typeof b.n === 'number' ? b.n : 1;
  // The whole body's bytes bound every prompt form (messages, input items, instructions, tools).
  const messages = (
    Array.isArray(b.messages) ? b.messages : Array.isArray(b.input) ? b.input : [b.input]
  ) as {
    content?: unknown;
  }[];
  const system = endpoint.systemApart || b.instructions != null ? 1 : 0;
  const bytes = Buffer.byteLength(JSON.stringify(b));
  const prompt = chatPromptTokens(entry, [...messages, ...Array(system).fill({})], bytes);
  return textQuote(price, prompt, perChoice * n).max;
}
