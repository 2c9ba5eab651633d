// The request-policy door of text calls (issue 30 item 4). Every dialect (chat completions,
// Messages, Responses — its previous_response_id history included, since that is translated with
// the rest) is first translated into the one chat form engines read, and only that form is checked,
// here, once: media URLs (schemes and hosts, ../media-urls.ts), image parts for a model without
// vision, chat_template_kwargs keys, tools for a model without tools, hosted tools, and the
// output bound. A dialect cannot skip a policy, nor a fourth dialect forget one: a text call
// (./text-call.ts) and a token count (./token-count.ts) take only what this door admitted — its
// types are branded, and only this file makes them (a layout test holds that). Before the door,
// the Responses API forwarded an `input_image` the others refused to the engine, which downloaded it.
//
// A refusal names the client's own field where the translator recorded it (../dialects/origins.ts),
// else the chat form's (which is the client's on chat completions). Pure: no I/O.
import type { CatalogueEntry } from '../../core/catalogue/index.ts';
import { ENDPOINTS, type Endpoint } from '../../core/endpoints.ts';
import { ApiError } from '../../core/errors.ts';
import { originOf } from '../dialects/origins.ts';
import { mediaUrlProblem } from '../media-urls.ts';
import { MAX_OUTPUT_TOKENS, TEMPLATE_SWITCHES } from '../schemas/openai.ts';

declare const admitted: unique symbol;

/** What every dialect's translation gives the door: chat messages and the chat request's other fields. */
export interface ChatFormIn {
  messages: readonly { content?: unknown }[];
  fields: Record<string, unknown>;
}

/** A chat prompt that passed every policy, serialized once (spliced into the engine request). */
export interface AdmittedPrompt {
  readonly [admitted]: 'prompt';
  readonly messages: readonly { content?: unknown }[];
  /** The fields to send: hosted tools (and chat's web_search_options) taken out. */
  readonly fields: Record<string, unknown>;
  readonly prompt: string;
  /** Bytes the hold counts for the prompt: messages and tool definitions. */
  readonly promptBytes: number;
  /** Hosted tools the client offered and the model was not (the `x-modelplane-tools-not-offered` header). */
  readonly notOffered: readonly string[];
}

const invalid = (message: string, param: string) => new ApiError('invalid_request', message, { param });

/** Every prompt policy, in one pass over the translated request. */
export function admitPrompt(entry: CatalogueEntry, form: ChatFormIn): AdmittedPrompt {
  checkParts(entry, form.messages);
  checkTemplateSwitches(form.fields);
  const { fields, notOffered } = withoutHostedTools(form.fields);
  checkTools(entry, fields);
  const prompt = JSON.stringify(form.messages);
  const tools = fields.tools;
  const promptBytes = Buffer.byteLength(prompt) + (tools ? Buffer.byteLength(JSON.stringify(tools)) : 0);
  return { messages: form.messages, fields, prompt, promptBytes, notOffered } as unknown as AdmittedPrompt;
}

const URL_PARTS = ['image_url', 'audio_url', 'video_url'] as const;

/** Image parts need a vision model; every media URL an engine would download must be public https or data:. */
function checkParts(entry: CatalogueEntry, messages: readonly { content?: unknown }[]): void {
  messages.forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    m.content.forEach((part: unknown, j: number) => {
      if (typeof part !== 'object' || part === null) return;
      const p = part as Record<string, unknown>;
      const origin = originOf(p);
      const at = origin?.part ?? `messages[${i}].content[${j}]`;
      if (p.type === 'image_url' && !entry.capabilities.vision)
        throw invalid(
          `${at} is an image, and this model (${entry.id}) cannot read images; choose a vision model`,
          at,
        );
      for (const kind of URL_PARTS) {
        if (p.type !== kind) continue;
        const inner = p[kind];
        // image_url may also be a bare string in some clients; both forms are checked.
        const url = typeof inner === 'string' ? inner : (inner as { url?: unknown } | null)?.url;
        const field = origin?.url ?? (typeof inner === 'string' ? `${at}.${kind}` : `${at}.${kind}.url`);
        if (typeof url !== 'string') continue;
        const problem = mediaUrlProblem(url);
        if (problem !== null) throw invalid(`${field} ${problem}.`, field);
      }
    });
  });
}

/**
 * chat_template_kwargs reaches the engine's template renderer as keyword arguments: only the known
 * switches (../schemas/openai.ts TEMPLATE_SWITCHES says why). Chat's schema refuses others
 * already; this holds for what any translator writes too.
 */
function checkTemplateSwitches(fields: Record<string, unknown>): void {
  const kwargs = fields.chat_template_kwargs;
  if (kwargs === undefined || kwargs === null) return;
  for (const key of Object.keys(kwargs as object))
    if (!(TEMPLATE_SWITCHES as readonly string[]).includes(key))
      throw invalid(
        `chat_template_kwargs.${key} is not accepted: only ${TEMPLATE_SWITCHES.join(', ')} are`,
        `chat_template_kwargs.${key}`,
      );
}

function checkTools(entry: CatalogueEntry, fields: Record<string, unknown>): void {
  if (entry.capabilities.tools) return;
  for (const key of ['tools', 'functions'] as const) {
    const list = fields[key];
    if (Array.isArray(list) && list.length > 0)
      throw invalid(
        `this model (${entry.id}) cannot call tools; remove ${key} or choose a tool-capable model`,
        key,
      );
  }
}

/**
 * Hosted tools (OpenAI's web search and the like run on OpenAI's servers; no engine here can run
 * them) that a client merely offers are left out, so a client that offers them by default (Codex
 * CLI offers web_search) is served; forcing one is a 400 naming it. A tool of any type but
 * `function` in the translated form is hosted: every translator turns what the client runs into
 * functions. Chat's `web_search_options` is chat's way of offering web search.
 */
function withoutHostedTools(fields: Record<string, unknown>): {
  fields: Record<string, unknown>;
  notOffered: string[];
} {
  const tools = Array.isArray(fields.tools) ? (fields.tools as { type?: unknown }[]) : [];
  const hosted = tools.filter((t) => t.type !== 'function').map((t) => String(t.type));
  const choice = fields.tool_choice as { type?: unknown } | string | null | undefined;
  if (typeof choice === 'object' && choice !== null && choice.type !== 'function') {
    const type = String(choice.type);
    if (type !== 'allowed_tools' && type !== 'custom')
      throw invalid(
        `tool_choice forces the hosted tool ${JSON.stringify(type)}, which runs on the vendor's servers and not here; offer it without forcing it, or remove it`,
        'tool_choice',
      );
  }
  if (fields.web_search_options != null) hosted.push('web_search');
  if (hosted.length === 0) return { fields, notOffered: [] };
  const out: Record<string, unknown> = {};
  for (const key in fields) if (key !== 'web_search_options') out[key] = fields[key];
  const kept = tools.filter((t) => t.type === 'function');
  if (kept.length > 0) out.tools = kept;
  else if (tools.length > 0) {
    if (choice === 'required')
      throw invalid(
        `tool_choice required forces a hosted tool (${hosted.join(', ')}), which runs on the vendor's servers and not here`,
        'tool_choice',
      );
    delete out.tools;
    delete out.tool_choice;
    delete out.parallel_tool_calls;
  }
  return { fields: out, notOffered: [...new Set(hosted)] };
}

/** The output bound a call runs with, decided once. */
export interface OutputBound {
  readonly [admitted]: 'output';
  /** Output tokens per choice the hold and the engine request are made for. */
  readonly perChoice: number;
  /** The request field that set it (named when it cannot be met). */
  readonly field: string;
  /**
   * Whether the caller asked for perChoice (refused if it does not fit beside the prompt in the
   * model's context) or it is a default (lowered to what the context leaves).
   */
  readonly asked: boolean;
  /** The bound the caller asked for, where it was above the model's limit and lowered to it. */
  readonly clampedFrom: number | null;
}

/** The most output a call on this model may ask for. */
export function outputLimit(entry: CatalogueEntry): number {
  return entry.maxOutputTokens ?? entry.contextLength ?? MAX_OUTPUT_TOKENS;
}

/**
 * The output bound of a call to `endpoint`: what the caller asked for, in the first of the
 * endpoint's output fields the body sets (core/endpoints.ts: chat's max_completion_tokens, else
 * max_tokens), else `fallback`, the dialect's default (named by the last field). Above the model's
 * limit it is served at the limit (issue 30 item 2): clients send one bound for every model (Claude
 * Code sends max_tokens 32000), and open models' limits are often lower (8,192), so refusing would
 * fail them on every such model; the hold is sized by the lowered bound and the response says so
 * (`x-modelplane-output-clamped`). A lowered bound counts as a default, lowered further to what the
 * context leaves. A Model with outputLimitPolicy `refuse` answers 400 naming the field instead, as
 * OpenAI does. The routes and a batch's line estimates (../batches/input.ts) both call this.
 */
export function admitOutput(
  entry: CatalogueEntry,
  endpoint: Endpoint,
  body: object,
  fallback: number,
): OutputBound {
  const fields: readonly string[] = ENDPOINTS[endpoint].output;
  if (fields.length === 0) throw new Error(`${endpoint} generates no output`);
  const b = body as Record<string, unknown>;
  // A loop, not find(): every text call passes here.
  let field = fields[fields.length - 1]!;
  for (const f of fields)
    if (b[f] != null) {
      field = f;
      break;
    }
  const asked = b[field] as number | null | undefined;
  const bound = (perChoice: number, isAsked: boolean, clampedFrom: number | null) =>
    ({ perChoice, field, asked: isAsked, clampedFrom }) as unknown as OutputBound;
  if (asked == null) return bound(fallback, false, null);
  const limit = outputLimit(entry);
  if (asked <= limit) return bound(asked, true, null);
  if (entry.outputLimitPolicy === 'refuse')
    throw invalid(
      `${field} is too large: ${asked}. This model supports at most ${limit} completion tokens, whereas you provided ${asked}.`,
      field,
    );
  return bound(limit, false, asked);
}
