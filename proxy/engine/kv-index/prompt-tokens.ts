// A chat request's prompt as the engine tokenizes it, for matching against the engines' KV events
// (whose token ids are the engine's). Every dialect reaches here in chat form (Messages and the
// Responses API are translated to chat messages before the engine call), so one tokenizer per
// model covers all three. Two kinds:
// - 'simulator': engines/simulator's own tokenizer (its README: runs of ≤ 4 non-space characters,
//   message texts joined by newlines, ids a cyrb53 hash of the piece) — its cache is keyed by those.
// - the model's tokenizer.json and tokenizer_config.json (a directory, or `hf:<repo>` fetched from
//   the hub: ./tokenizer-files.ts): the chat template
//   rendered with Jinja as vLLM renders it (messages, tools, add_generation_prompt), then encoded
//   without special tokens (the template writes them), as vLLM's chat path does; with a cache of
//   the rendered text's pieces (./segment-cache.ts) when cacheTokens is set.
// The proxy runs these in worker threads (./tokenizer-pool.ts), off the event loop.
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { blockKey } from './block-keys.ts';
import { SegmentCache } from './segment-cache.ts';
import { type HubAccess, tokenizerFiles } from './tokenizer-files.ts';

export interface ChatPrompt {
  messages: readonly unknown[];
  tools?: unknown;
}

/** `pieces`: the piece cache's counts (tests, bench), for a tokenizer.json one. */
export type PromptTokenizer = ((prompt: ChatPrompt) => number[]) & { pieces?: SegmentCache['stats'] };

export async function loadPromptTokenizer(
  spec: string,
  hub: HubAccess = { url: 'https://huggingface.co' },
  /** Tokens of rendered-prompt pieces kept for reuse (./segment-cache.ts); 0: none. */
  cacheTokens = 0,
): Promise<PromptTokenizer> {
  if (spec === 'simulator') return simulatorTokens;
  const { json, config } = await tokenizerFiles(spec, hub);
  const tokenizer = new Tokenizer(json, config);
  const encode = (text: string) => tokenizer.encode(text, { add_special_tokens: false }).ids;
  const pieces = new SegmentCache(encode, json as ConstructorParameters<typeof SegmentCache>[1], cacheTokens);
  const template = new Template(chatTemplateOf(config));
  const special = { bos_token: tokenText(config.bos_token), eos_token: tokenText(config.eos_token) };
  const tokenize: PromptTokenizer = (prompt) => {
    const text = template.render({
      messages: prompt.messages.map((m) => parsedToolArguments(flattenTextParts(m))),
      ...(prompt.tools ? { tools: prompt.tools } : {}),
      add_generation_prompt: true,
      ...special,
    });
    return pieces.ids(text);
  };
  tokenize.pieces = pieces.stats;
  return tokenize;
}

const SIM_TOKEN = /\s*[^\s]{1,4}/gu;
const SIM_VOCAB = 151_936;

export function simulatorTokens(prompt: ChatPrompt): number[] {
  const text = prompt.messages.map(simulatorMessageText).join('\n');
  const ids: number[] = [];
  for (const [piece] of text.matchAll(SIM_TOKEN)) {
    // The simulator's id is cyrb53(piece) mod its vocabulary; blockKey with parent 0 is cyrb53.
    ids.push(blockKey(0, piece, 0, piece.length) % SIM_VOCAB);
  }
  return ids;
}

function simulatorMessageText(raw: unknown): string {
  const m = (raw ?? {}) as { content?: unknown; tool_calls?: unknown };
  const parts: string[] = [];
  if (typeof m.content === 'string') parts.push(m.content);
  else if (Array.isArray(m.content))
    for (const p of m.content as { type?: unknown; text?: unknown }[])
      if (p?.type === 'text' && typeof p.text === 'string') parts.push(p.text);
  if (Array.isArray(m.tool_calls))
    for (const c of m.tool_calls as { function?: { name?: unknown; arguments?: unknown } }[])
      if (typeof c?.function?.name === 'string')
        parts.push(`${c.function.name} ${String(c.function.arguments ?? '')}`);
  return parts.join('\n');
}

/** vLLM hands a string-content template the text parts joined by newlines. */
function flattenTextParts(raw: unknown): unknown {
  const m = raw as { content?: unknown };
  if (!Array.isArray(m?.content)) return raw;
  const text = (m.content as { type?: unknown; text?: unknown }[])
    .filter((p) => p?.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text as string)
    .join('\n');
  return { ...m, content: text };
}

/**
 * vLLM hands a template an assistant's tool-call arguments as an object, parsed from the JSON string
 * the chat API carries (vllm/renderers/chat_utils.py _postprocess_messages, as Transformers asks),
 * after its request model has put the function's keys in its own order.
 */
function parsedToolArguments(raw: unknown): unknown {
  const m = raw as { role?: unknown; tool_calls?: unknown };
  if (m?.role !== 'assistant' || !Array.isArray(m.tool_calls)) return raw;
  const calls = (m.tool_calls as { function?: { arguments?: unknown } }[]).map((c) => {
    const args = c?.function?.arguments;
    if (typeof args !== 'string') return c;
    try {
      // Keys in the order vLLM's request model declares them (OpenAI's Function: arguments, name):
      // a template's `tojson` writes them in that order (seen against vLLM 0.32's /tokenize).
      const { arguments: _, ...rest } = c.function as Record<string, unknown>;
      return { ...c, function: { arguments: JSON.parse(args) as unknown, ...rest } };
    } catch {
      return c;
    }
  });
  return { ...m, tool_calls: calls };
}

function chatTemplateOf(config: Record<string, unknown>): string {
  const t = config.chat_template;
  if (typeof t === 'string') return t;
  if (Array.isArray(t)) {
    const named = (t as { name?: string; template?: string }[]).find((x) => x.name === 'default') ?? t[0];
    if (typeof named?.template === 'string') return named.template;
  }
  throw new Error('tokenizer_config.json has no chat_template');
}

function tokenText(v: unknown): string {
  if (typeof v === 'string') return v;
  const content = (v as { content?: unknown } | null)?.content;
  return typeof content === 'string' ? content : '';
}
