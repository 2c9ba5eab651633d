// The rate-limit headers of a rate-limited key's answers (issue 34), in each vendor's names and
// meanings, so the official SDKs (and whatever reads those headers) understand them unchanged —
// pure: the windows' standing (as the reserve script left it, on Redis time) in, headers out.
// A key without limits has no standing and gets no header at all: it answers exactly as before.
//
// Chat surface (OpenAI's names): x-ratelimit-{limit,remaining,reset}-{requests,tokens}, the reset a
// duration ("1s", "6m0s", "20ms": until the bucket is full again). OpenAI has one token limit; we
// have input and output, so `tokens` is whichever of the two is nearer its limit.
// Messages surface (Anthropic's): anthropic-ratelimit-{requests,input-tokens,output-tokens}-
// {limit,remaining,reset}, the reset an RFC 3339 time.
// A refusal adds retry-after-ms beside retry-after (the ApiError's, whole seconds): both SDKs read
// the ms one first, so they wait exactly as long as needed.
import type { WindowStanding, WindowsState } from '../../core/billing/index.ts';
import type { Dialect } from '../../http/dialect.ts';

export function rateLimitHeaders(dialect: Dialect, w: WindowsState): Record<string, string> {
  const h: Record<string, string> = {};
  switch (dialect) {
    case 'openai': {
      put(h, 'requests', w.requests, (s) => duration(s.resetMs), openAiName);
      put(h, 'tokens', nearer(w.inputTokens, w.outputTokens), (s) => duration(s.resetMs), openAiName);
      return h;
    }
    case 'messages': {
      const at = (s: WindowStanding) => new Date(Math.ceil((w.at + s.resetMs) / 1000) * 1000).toISOString();
      put(h, 'requests', w.requests, at, anthropicName);
      put(h, 'input-tokens', w.inputTokens, at, anthropicName);
      put(h, 'output-tokens', w.outputTokens, at, anthropicName);
      return h;
    }
    default: {
      const unreachable: never = dialect;
      throw new Error(`no rate-limit headers for dialect ${String(unreachable)}`);
    }
  }
}

/** The extra header of a refusal: the exact wait, in ms. */
export const retryAfterMsHeader = (ms: number): Record<string, string> => ({
  'retry-after-ms': String(Math.max(1, Math.ceil(ms))),
});

type Field = 'limit' | 'remaining' | 'reset';
const openAiName = (what: string, f: Field) => `x-ratelimit-${f}-${what}`;
const anthropicName = (what: string, f: Field) => `anthropic-ratelimit-${what}-${f}`;

function put(
  h: Record<string, string>,
  what: string,
  s: WindowStanding | null,
  reset: (s: WindowStanding) => string,
  name: (what: string, f: Field) => string,
): void {
  if (s === null) return;
  h[name(what, 'limit')] = String(s.limit);
  h[name(what, 'remaining')] = String(s.remaining);
  h[name(what, 'reset')] = reset(s);
}

/** Of two token windows, the one with the smaller share left (the one that refuses first). */
function nearer(a: WindowStanding | null, b: WindowStanding | null): WindowStanding | null {
  if (a === null || b === null) return a ?? b;
  return b.remaining * a.limit < a.remaining * b.limit ? b : a;
}

/** OpenAI's duration form: "20ms", "1.5s", "6m0s". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const s = Math.ceil(ms) / 1000;
  if (s < 60) return `${Number(s.toFixed(3))}s`;
  const m = Math.floor(s / 60);
  return `${m}m${Number((s - m * 60).toFixed(3))}s`;
}
