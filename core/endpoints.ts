// The endpoint table: the API's call endpoints a batch line can be (docs/batches.md), by path, with
// what each one is — its dialect, the kind its calls are priced as, the request fields that bound
// its output — in one place. The proxy's routes and batches and the console read it; nothing else
// compares a '/v1/…' path (test/layout holds that). Its proxy half (proxy/calls/endpoints.ts) adds
// each endpoint's request schema and output bound, keyed by these paths so the two cannot drift.
// A batch record keeps its endpoint's path: a batch's API is its endpoint's dialect. Here in core/,
// not http/, because http/ names no path (http/dialect.ts), and the console reads it too.

export interface EndpointFacts {
  /** The API it speaks: its errors' shape, and its batches' API (messages: Anthropic's Message Batches). */
  readonly dialect: 'openai' | 'messages';
  /** What its calls are priced and recorded as (the usage record's kind). */
  readonly kind: 'chat' | 'embedding';
  /** The request fields that bound its output per choice, the first one set winning; none: no output. */
  readonly output: readonly string[];
  /** The system prompt is a field apart from the messages, so a prompt's bound counts one message more. */
  readonly systemApart: boolean;
}

export const ENDPOINTS = {
  '/v1/chat/completions': {
    dialect: 'openai',
    kind: 'chat',
    output: ['max_completion_tokens', 'max_tokens'],
    systemApart: false,
  },
  '/v1/responses': { dialect: 'openai', kind: 'chat', output: ['max_output_tokens'], systemApart: false },
  '/v1/embeddings': { dialect: 'openai', kind: 'embedding', output: [], systemApart: false },
  '/v1/messages': { dialect: 'messages', kind: 'chat', output: ['max_tokens'], systemApart: true },
} as const satisfies Record<string, EndpointFacts>;

export type Endpoint = keyof typeof ENDPOINTS;

/** The endpoints OpenAI's Batch API runs: the table's in the openai dialect, in its order. */
export const OPENAI_BATCH_ENDPOINTS = (Object.keys(ENDPOINTS) as Endpoint[]).filter(
  (e) => ENDPOINTS[e].dialect === 'openai',
) as [Exclude<Endpoint, '/v1/messages'>, ...Exclude<Endpoint, '/v1/messages'>[]];

/** A path's facts; undefined for one not in the table (a record from before, or none). */
export function endpointOf(path: string | undefined): EndpointFacts | undefined {
  return path !== undefined && Object.hasOwn(ENDPOINTS, path) ? ENDPOINTS[path as Endpoint] : undefined;
}

/** Whether a path speaks the Messages dialect (a batch of it is one of Anthropic's Message Batches). */
export const speaksMessages = (path: string | undefined): boolean => endpointOf(path)?.dialect === 'messages';
