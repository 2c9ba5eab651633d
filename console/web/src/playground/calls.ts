// The Playground's calls (SPEC "What the service does" 3, 4, 6): straight from the browser to the
// public API with one of the account's keys (CORS for the console's origin, PROXY_CORS_ORIGINS),
// so a Playground call is authenticated, charged, timed and reported like any API call (BILL-7).
// The console server is never in the path.
import { type Dialect, paramFields, type SamplingParams } from './params.ts';
import { ToolCalls } from './tools.ts';

export type { Dialect };

export interface ChatMessage {
  role: 'user' | 'assistant';
  content: string;
}

export interface ChatRequest {
  model: string;
  system: string;
  messages: ChatMessage[];
  params: SamplingParams;
}

/** What a finished (or stopped) streamed reply measured. */
export interface RunMetrics {
  /** ms from sending to the first generated text. */
  ttftMs: number | null;
  /** ms from sending to the end of the reply (or to Stop). */
  totalMs: number | null;
  /** Output tokens per second after the first token. */
  tokensPerSecond: number | null;
  inputTokens: number | null;
  cachedTokens: number | null;
  outputTokens: number | null;
  /** `usage.cost` when the response carries it (a decimal string), else null. */
  cost: string | null;
  requestId: string | null;
  stopped: boolean;
}

/**
 * What a refusal's body and headers say of its cause beyond the code: whose spend limit it was
 * (`limit_source`: the key's or the account's), its window and reset (a budget), and when a retry
 * passes (Retry-After: a rate limit, an overloaded model).
 */
export interface RefusalFacts {
  limitSource?: 'key' | 'account';
  limitWindow?: 'day' | 'week' | 'month';
  resetsAt?: string;
  retryAfterS?: number;
}

/** A refusal or failure of the API, with its code, for the words shown to a person (./errors.ts). */
export class CallError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | null,
    readonly facts: RefusalFacts = {},
  ) {
    super(message);
  }
}

const WINDOWS = ['day', 'week', 'month'] as const;

/** The facts of an error object (either dialect's: both carry the details beside the message). */
export function refusalFacts(
  error: Record<string, unknown> | undefined,
  retryAfter: string | null,
): RefusalFacts {
  const facts: RefusalFacts = {};
  const source = error?.limit_source;
  if (source === 'key' || source === 'account') facts.limitSource = source;
  const window = WINDOWS.find((w) => w === error?.limit_window);
  if (window) facts.limitWindow = window;
  if (typeof error?.resets_at === 'string') facts.resetsAt = error.resets_at;
  const seconds = Number(retryAfter);
  if (retryAfter !== null && Number.isFinite(seconds) && seconds >= 0) facts.retryAfterS = Math.ceil(seconds);
  return facts;
}

async function refusal(res: Response): Promise<CallError> {
  const text = await res.text().catch(() => '');
  let body: { error?: { message?: string; code?: string; type?: string } & Record<string, unknown> } = {};
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: the status says enough
  }
  return new CallError(
    body.error?.message ?? `The API answered ${res.status}.`,
    res.status,
    body.error?.code ?? body.error?.type ?? null,
    refusalFacts(body.error, res.headers.get('retry-after')),
  );
}

/** The messages base (no /v1) of the chat-completions base. */
export const messagesBase = (apiBase: string) => apiBase.replace(/\/v1\/?$/, '');

export function chatBody(r: ChatRequest, dialect: Dialect) {
  const params = paramFields(r.params, dialect);
  if (dialect === 'messages')
    return {
      model: r.model,
      ...params,
      ...(r.system ? { system: r.system } : {}),
      messages: r.messages,
      stream: true,
    };
  return {
    model: r.model,
    messages: [...(r.system ? [{ role: 'system', content: r.system }] : []), ...r.messages],
    ...params,
    stream: true,
    stream_options: { include_usage: true },
  };
}

/** Server-sent events of a response body, one parsed `data:` object at a time. */
async function* events(body: ReadableStream<Uint8Array>): AsyncGenerator<Record<string, unknown>> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let cut = buf.indexOf('\n\n');
    while (cut >= 0) {
      const frame = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      cut = buf.indexOf('\n\n');
      const data = frame
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n');
      if (data === '' || data === '[DONE]') continue;
      yield JSON.parse(data) as Record<string, unknown>;
    }
  }
}

type Usage = {
  prompt_tokens?: number;
  completion_tokens?: number;
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number };
  cost?: string;
};

/**
 * Streams one reply: `onText` gets each piece of text as it arrives. Resolves with the metrics
 * when the stream ends or `signal` stops it (the proxy then stops the engine and bills what was
 * generated); rejects with a CallError for a refusal or an in-band stream error.
 */
export async function streamReply(o: {
  apiBase: string;
  secret: string;
  dialect: Dialect;
  request: ChatRequest;
  signal: AbortSignal;
  onText: (text: string) => void;
  onMetrics?: (m: RunMetrics) => void;
}): Promise<RunMetrics> {
  const url =
    o.dialect === 'messages' ? `${messagesBase(o.apiBase)}/v1/messages` : `${o.apiBase}/chat/completions`;
  const headers: Record<string, string> =
    o.dialect === 'messages'
      ? { 'x-api-key': o.secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }
      : { authorization: `Bearer ${o.secret}`, 'content-type': 'application/json' };
  const m: RunMetrics = {
    ttftMs: null,
    totalMs: null,
    tokensPerSecond: null,
    inputTokens: null,
    cachedTokens: null,
    outputTokens: null,
    cost: null,
    requestId: null,
    stopped: false,
  };
  const t0 = performance.now();
  let first = 0;
  let pieces = 0;
  const live = () => {
    if (m.ttftMs === null) return;
    const seconds = (performance.now() - first) / 1000;
    const tokens = m.outputTokens ?? pieces;
    if (seconds > 0 && tokens > 1) m.tokensPerSecond = (tokens - 1) / seconds;
    o.onMetrics?.({ ...m });
  };
  // A tool call's first piece is a first token too: a reply may be nothing but a tool call.
  const firstToken = () => {
    if (m.ttftMs !== null) return;
    first = performance.now();
    m.ttftMs = first - t0;
  };
  const tools = new ToolCalls();
  const text = (t: string) => {
    if (t === '') return;
    firstToken();
    pieces++;
    o.onText(t);
    live();
  };
  const usage = (u: Usage | undefined) => {
    if (!u) return;
    m.inputTokens = u.prompt_tokens ?? u.input_tokens ?? m.inputTokens;
    m.outputTokens = u.completion_tokens ?? u.output_tokens ?? m.outputTokens;
    m.cachedTokens = u.prompt_tokens_details?.cached_tokens ?? u.cache_read_input_tokens ?? m.cachedTokens;
    if (typeof u.cost === 'string') m.cost = u.cost;
  };
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify(chatBody(o.request, o.dialect)),
      signal: o.signal,
    });
    m.requestId = res.headers.get('x-request-id');
    if (!res.ok || !res.body) throw await refusal(res);
    for await (const e of events(res.body)) {
      if (e.error || e.type === 'error') {
        const err = e.error as { message?: string; code?: string; type?: string } | undefined;
        throw new CallError(
          err?.message ?? 'The stream failed.',
          200,
          err?.code ?? err?.type ?? 'stream_error',
        );
      }
      if (o.dialect === 'chat') {
        const choice = (
          e.choices as { delta?: { content?: string; tool_calls?: unknown } }[] | undefined
        )?.[0];
        if (tools.chatDelta(choice?.delta?.tool_calls)) firstToken();
        text(choice?.delta?.content ?? '');
        usage(e.usage as Usage | undefined);
      } else if (tools.messagesEvent(e)) {
        firstToken();
      } else if (e.type === 'content_block_delta') {
        text((e.delta as { text?: string }).text ?? '');
      } else if (e.type === 'message_start') {
        usage((e.message as { usage?: Usage }).usage);
      } else if (e.type === 'message_delta') {
        usage(e.usage as Usage | undefined);
      }
    }
  } catch (err) {
    if (!o.signal.aborted) throw err;
    m.stopped = true;
  }
  // The calls, once whole, close the reply: a name and its JSON arguments (./tools.ts).
  const called = tools.markdown();
  if (called) o.onText(called);
  if (m.outputTokens === null && pieces > 0) m.outputTokens = pieces;
  m.totalMs = performance.now() - t0;
  live();
  return m;
}

const json = (secret: string) => ({ authorization: `Bearer ${secret}`, 'content-type': 'application/json' });

/** OpenAI's quality and style; a seed is passed to the engine as it is (open image models take one). */
export interface ImageOptions {
  quality?: string;
  style?: string;
  seed?: number;
}

export interface ImageResult {
  src: string;
  cost: string | null;
}

/** Generates or edits images; each comes back as base64 and is shown (and downloadable) in the page. */
export async function images(o: {
  apiBase: string;
  secret: string;
  model: string;
  prompt: string;
  size: string;
  n: number;
  /** What the person chose beyond size and n; left out when left to the model (issue 37 item 5). */
  options?: ImageOptions;
  edit?: File[];
  signal?: AbortSignal;
}): Promise<ImageResult[]> {
  let res: Response;
  if (o.edit) {
    const form = new FormData();
    form.set('model', o.model);
    form.set('prompt', o.prompt);
    form.set('n', String(o.n));
    form.set('size', o.size);
    form.set('response_format', 'b64_json');
    // An edit's form takes quality (proxy/schemas/media.ts imageEditFields), not style or seed.
    if (o.options?.quality) form.set('quality', o.options.quality);
    for (const f of o.edit) form.append(o.edit.length > 1 ? 'image[]' : 'image', f, f.name);
    res = await fetch(`${o.apiBase}/images/edits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${o.secret}` },
      body: form,
      ...(o.signal ? { signal: o.signal } : {}),
    });
  } else {
    res = await fetch(`${o.apiBase}/images/generations`, {
      method: 'POST',
      headers: json(o.secret),
      body: JSON.stringify({
        model: o.model,
        prompt: o.prompt,
        n: o.n,
        size: o.size,
        ...o.options,
        response_format: 'b64_json',
      }),
      ...(o.signal ? { signal: o.signal } : {}),
    });
  }
  if (!res.ok) throw await refusal(res);
  const body = (await res.json()) as { data: { b64_json?: string; url?: string }[]; usage?: Usage };
  const cost = typeof body.usage?.cost === 'string' ? body.usage.cost : null;
  return body.data.map((d) => ({
    src: d.b64_json ? `data:image/png;base64,${d.b64_json}` : (d.url ?? ''),
    cost,
  }));
}

export interface VideoJob {
  id: string;
  model: string;
  status: 'queued' | 'in_progress' | 'completed' | 'failed';
  progress?: number;
  seconds?: string;
  size?: string;
  prompt?: string;
  created_at?: number;
  error?: { message?: string } | null;
  usage?: Usage;
}

export async function createVideo(o: {
  apiBase: string;
  secret: string;
  model: string;
  prompt: string;
  seconds: string;
  size: string;
  image?: File;
}): Promise<VideoJob> {
  let res: Response;
  if (o.image) {
    const form = new FormData();
    form.set('model', o.model);
    form.set('prompt', o.prompt);
    form.set('seconds', o.seconds);
    form.set('size', o.size);
    form.set('input_reference', o.image, o.image.name);
    res = await fetch(`${o.apiBase}/videos`, {
      method: 'POST',
      headers: { authorization: `Bearer ${o.secret}` },
      body: form,
    });
  } else {
    res = await fetch(`${o.apiBase}/videos`, {
      method: 'POST',
      headers: json(o.secret),
      body: JSON.stringify({ model: o.model, prompt: o.prompt, seconds: o.seconds, size: o.size }),
    });
  }
  if (!res.ok) throw await refusal(res);
  return (await res.json()) as VideoJob;
}

export async function getVideo(apiBase: string, secret: string, id: string): Promise<VideoJob> {
  const res = await fetch(`${apiBase}/videos/${encodeURIComponent(id)}`, { headers: json(secret) });
  if (!res.ok) throw await refusal(res);
  return (await res.json()) as VideoJob;
}

export async function listVideos(
  apiBase: string,
  secret: string,
  after?: string,
): Promise<{ data: VideoJob[]; has_more: boolean; last_id?: string | null }> {
  const q = new URLSearchParams({ limit: '5', ...(after ? { after } : {}) });
  const res = await fetch(`${apiBase}/videos?${q}`, { headers: json(secret) });
  if (!res.ok) throw await refusal(res);
  return (await res.json()) as { data: VideoJob[]; has_more: boolean; last_id?: string | null };
}

/**
 * The finished MP4's signed link (it needs no key, so a <video> element can play it): the content
 * route answers 302 to it; the body is not read here.
 */
export async function videoLink(apiBase: string, secret: string, id: string): Promise<string> {
  const res = await fetch(`${apiBase}/videos/${encodeURIComponent(id)}/content`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  if (!res.ok) throw await refusal(res);
  await res.body?.cancel();
  return res.url;
}
