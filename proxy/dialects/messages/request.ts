// Messages request → chat-completions request, the direction a call goes to an engine (engines
// speak chat completions). Pure: a validated Messages body in, the chat messages and fields out,
// or a 400 naming what cannot be carried faithfully. The other direction is ./response.ts and
// ./stream.ts; the table of mappings is in the tests beside each.
import { ApiError } from '../../../core/errors.ts';
import type { ContentBlock, CountTokensRequest, MessagesRequest, ToolParam } from '../../schemas/messages.ts';
import { fromClient } from '../origins.ts';

/**
 * What the engine can carry; a request needing more is refused by name rather than degraded —
 * tools and vision by the policy door (../../calls/text-door.ts), reasoning here.
 */
export interface EngineAbilities {
  tools: boolean;
  vision: boolean;
  reasoning: boolean;
}

type ChatPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | ChatPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ChatForm {
  messages: ChatMessage[];
  /** The chat request's other fields, in the order they are sent. */
  fields: Record<string, unknown>;
  /**
   * The prompt up to its last `cache_control` breakpoint (tools, system, messages — Anthropic's
   * cache order), rendered: equal prefixes route to the engine whose prefix cache holds them.
   */
  cachePrefix: string | null;
}

const invalid = (message: string, param: string) => new ApiError('invalid_request', message, { param });

/**
 * The whole translation, in the order Anthropic's cache reads a prompt (tools, system, messages),
 * each piece below on its own (and table-tested beside this file). `fields` keeps the order its
 * pieces add to it: it is the order they are sent.
 */
export function toChatRequest(req: MessagesRequest | CountTokensRequest, can: EngineAbilities): ChatForm {
  const tools = chatTools(req);
  const fields: Record<string, unknown> = {};
  if (tools !== undefined) fields.tools = tools;
  Object.assign(fields, toolChoiceFields(req, tools !== undefined));
  const messages: ChatMessage[] = [];
  // Breakpoint bookkeeping: how many chat messages the last breakpoint covers (-1: none).
  let cachedMessages = -1;
  const system = systemMessage(req);
  if (system !== null) messages.push(system);
  if (typeof req.system !== 'string' && req.system?.some((b) => b.cache_control))
    cachedMessages = messages.length;
  req.messages.forEach((m, i) => {
    const { turn, breakpoint } = chatTurn(m, `messages[${i}]`);
    messages.push(...turn);
    if (breakpoint) cachedMessages = messages.length;
  });
  Object.assign(
    fields,
    prefillFields(req),
    samplingFields(req),
    thinkingFields(req, can),
    outputConfigFields(req, can),
  );
  // A top-level cache_control makes the whole prompt the breakpoint (automatic caching).
  if (req.cache_control) cachedMessages = messages.length;
  const cachedTools = req.tools?.some((t) => t.cache_control) === true && tools !== undefined;
  return { messages, fields, cachePrefix: cachePrefixOf(tools, cachedTools, messages, cachedMessages) };
}

/** The request's tools as chat functions (undefined: none); a model without tools is the door's to refuse. */
export function chatTools(req: Pick<MessagesRequest, 'tools'>): unknown[] | undefined {
  if (req.tools === undefined || req.tools.length === 0) return undefined;
  return req.tools.map(chatTool);
}

/** tool_choice in chat's terms (`any` is `required`; a named tool, a function), and parallel calls. */
export function toolChoiceFields(
  req: Pick<MessagesRequest, 'tools' | 'tool_choice'>,
  hasTools: boolean,
): Record<string, unknown> {
  const choice = req.tool_choice;
  if (choice === undefined) return {};
  if (choice.type === 'tool' && !req.tools?.some((t) => t.name === choice.name))
    throw invalid(
      `tool_choice names ${JSON.stringify(choice.name)}, which is not in tools`,
      'tool_choice.name',
    );
  if (choice.type !== 'none' && !hasTools)
    throw invalid(`tool_choice ${choice.type} needs tools`, 'tool_choice');
  const out: Record<string, unknown> = {
    tool_choice:
      choice.type === 'auto'
        ? 'auto'
        : choice.type === 'any'
          ? 'required'
          : choice.type === 'none'
            ? 'none'
            : { type: 'function', function: { name: choice.name } },
  };
  if ('disable_parallel_tool_use' in choice && choice.disable_parallel_tool_use === true)
    out.parallel_tool_calls = false;
  return out;
}

/** The system prompt as one system message (its blocks joined by blank lines), or null. */
export function systemMessage(req: Pick<MessagesRequest, 'system'>): ChatMessage | null {
  if (req.system === undefined) return null;
  const text = typeof req.system === 'string' ? req.system : req.system.map((b) => b.text).join('\n\n');
  return text === '' ? null : { role: 'system', content: text };
}

type MessageParam = MessagesRequest['messages'][number];

/** One Messages turn as chat messages, and whether it holds a cache breakpoint. */
export function chatTurn(m: MessageParam, at: string): { turn: ChatMessage[]; breakpoint: boolean } {
  if (m.role === 'system') return { turn: [systemTurn(m.content, at)], breakpoint: false };
  if (typeof m.content === 'string')
    return {
      turn: [
        m.role === 'user' ? { role: 'user', content: m.content } : { role: 'assistant', content: m.content },
      ],
      breakpoint: false,
    };
  const breakpoint = m.content.some(hasBreakpoint);
  return {
    turn: m.role === 'assistant' ? [assistantTurn(m.content, at)] : userTurn(m.content, at),
    breakpoint,
  };
}

/**
 * A `system` turn inside messages (the current Messages API has them; Claude Code sends one): a
 * chat system message in the same place, which chat templates render where it stands. Text only.
 */
function systemTurn(content: MessageParam['content'], at: string): ChatMessage {
  if (typeof content === 'string') return { role: 'system', content };
  const texts = content.map((b, j) => {
    if (b.type !== 'text')
      throw invalid(
        `a ${b.type} block cannot appear in a system turn (text only)`,
        `${at}.content[${j}].type`,
      );
    return b.text;
  });
  return { role: 'system', content: texts.join('\n\n') };
}

function assistantTurn(blocks: ContentBlock[], at: string): ChatMessage {
  let text = '';
  const calls: ChatToolCall[] = [];
  blocks.forEach((b, j) => {
    switch (b.type) {
      case 'text':
        text += b.text;
        break;
      case 'tool_use':
        calls.push({
          id: b.id,
          type: 'function',
          function: { name: b.name, arguments: JSON.stringify(b.input) },
        });
        break;
      // Earlier turns' reasoning is not part of the prompt: reasoning models' chat templates drop
      // it too (vLLM, Qwen3, DeepSeek-R1), so nothing the engine would read is lost.
      case 'thinking':
      case 'redacted_thinking':
        break;
      default:
        throw invalid(`a ${b.type} block cannot appear in an assistant turn`, `${at}.content[${j}].type`);
    }
  });
  return {
    role: 'assistant',
    content: text === '' && calls.length > 0 ? null : text,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
  };
}

/**
 * A user turn: tool results first (chat wants them right after the assistant's calls), in order,
 * then what else the turn says as one user message. An image's URL and the model's vision are the
 * door's to check (../../calls/text-door.ts); the part remembers its block, which the door names.
 */
function userTurn(blocks: ContentBlock[], at: string): ChatMessage[] {
  const out: ChatMessage[] = [];
  const parts: ChatPart[] = [];
  blocks.forEach((b, j) => {
    const p = `${at}.content[${j}]`;
    switch (b.type) {
      case 'text':
        parts.push({ type: 'text', text: b.text });
        break;
      case 'image':
        parts.push(
          fromClient(
            { type: 'image_url', image_url: { url: imageUrl(b.source) } },
            { part: p, url: `${p}.source.url` },
          ),
        );
        break;
      case 'tool_result':
        out.push({ role: 'tool', tool_call_id: b.tool_use_id, content: toolResultText(b, p) });
        break;
      default:
        throw invalid(`a ${b.type} block cannot appear in a user turn`, `${p}.type`);
    }
  });
  if (parts.length > 0) {
    const onlyText = parts.every((x) => x.type === 'text');
    out.push({
      role: 'user',
      content: onlyText ? (parts as { text: string }[]).map((x) => x.text).join('\n') : parts,
    });
  }
  return out;
}

/**
 * A final assistant turn (a prefill): vLLM continues the last message instead of opening a new
 * one, so the answer carries on from the prefill, as Anthropic's does, and holds only the
 * continuation. Not with thinking on.
 */
export function prefillFields(req: MessagesRequest | CountTokensRequest): Record<string, unknown> {
  const prefill = finalAssistantTurn(req);
  if (prefill === null) return {};
  if (req.thinking !== undefined && req.thinking.type !== 'disabled')
    throw invalid(
      'a final assistant turn (a prefill) cannot be continued with thinking on; remove one of them',
      prefill,
    );
  return { continue_final_message: true, add_generation_prompt: false };
}

/** Sampling and the caller's id, named as chat names them (count_tokens has none of them). */
export function samplingFields(req: MessagesRequest | CountTokensRequest): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (!('max_tokens' in req)) return fields;
  if (req.stop_sequences !== undefined && req.stop_sequences.length > 0) fields.stop = req.stop_sequences;
  if (req.temperature !== undefined) fields.temperature = req.temperature;
  if (req.top_p !== undefined) fields.top_p = req.top_p;
  if (req.top_k !== undefined) fields.top_k = req.top_k;
  if (typeof req.metadata?.user_id === 'string') fields.user = req.metadata.user_id;
  return fields;
}

/** `thinking` as vLLM's reasoning models take it, refused for a model that cannot think. */
export function thinkingFields(
  req: Pick<MessagesRequest, 'thinking'>,
  can: Pick<EngineAbilities, 'reasoning'>,
): Record<string, unknown> {
  const thinking = req.thinking;
  // Adaptive thinking leaves whether and how much to think to the model: one that cannot think
  // answers directly, which is what adaptive allows (Claude Code sends it with every request).
  if (thinking?.type === 'adaptive' && !can.reasoning) return {};
  if (thinking !== undefined && thinking.type !== 'disabled') {
    if (!can.reasoning)
      throw invalid('this model cannot think before answering; remove thinking', 'thinking');
    // vLLM's reasoning models (Qwen3, …) switch thinking on through the chat template; adaptive
    // thinking leaves its length to the model, as such a model does anyway.
    const fields: Record<string, unknown> = { chat_template_kwargs: { enable_thinking: true } };
    // vLLM caps the reasoning at this many tokens, then makes the model answer.
    if (thinking.type === 'enabled') fields.thinking_token_budget = thinking.budget_tokens;
    return fields;
  }
  if (thinking?.type === 'disabled' && can.reasoning)
    return { chat_template_kwargs: { enable_thinking: false } };
  return {};
}

/**
 * output_config: `effort` is vLLM's reasoning_effort on a model that reasons (its scale stops at
 * high, so xhigh and max are high) and advisory elsewhere, as Anthropic says effort is a hint;
 * `format` is chat's structured output (response_format json_schema).
 */
export function outputConfigFields(
  req: Pick<MessagesRequest, 'output_config'>,
  can: Pick<EngineAbilities, 'reasoning'>,
): Record<string, unknown> {
  const config = req.output_config;
  if (config === undefined) return {};
  const fields: Record<string, unknown> = {};
  const effort = config.effort;
  if (effort != null && can.reasoning)
    fields.reasoning_effort = effort === 'low' || effort === 'medium' ? effort : 'high';
  if (config.format != null)
    fields.response_format = {
      type: 'json_schema',
      json_schema: { name: 'output', schema: config.format.schema, strict: true },
    };
  return fields;
}

/** The prompt up to its last breakpoint, rendered (null: no breakpoint). */
export function cachePrefixOf(
  tools: unknown[] | undefined,
  cachedTools: boolean,
  messages: ChatMessage[],
  cachedMessages: number,
): string | null {
  if (cachedMessages < 0 && !cachedTools) return null;
  const t = tools ? JSON.stringify(tools) : '';
  return cachedMessages >= 0 ? t + JSON.stringify(messages.slice(0, cachedMessages)) : t;
}

/**
 * A custom tool as a chat function. `input_examples` have no field of their own in chat: they
 * join the description, which the engine's chat template renders beside the schema.
 * `eager_input_streaming` needs nothing: tool input always streams as the engine makes it.
 */
function chatTool(t: ToolParam) {
  let description = t.description;
  if (t.input_examples !== undefined && t.input_examples.length > 0) {
    const examples = t.input_examples.map((e) => JSON.stringify(e)).join('\n');
    description = `${description === undefined ? '' : `${description}\n\n`}Input examples:\n${examples}`;
  }
  return {
    type: 'function',
    function: {
      name: t.name,
      ...(description !== undefined ? { description } : {}),
      parameters: t.input_schema ?? { type: 'object', properties: {} },
      ...(t.strict !== undefined ? { strict: t.strict } : {}),
    },
  };
}

/**
 * Where the request ends with an assistant turn (a prefill the answer continues): its path, or
 * null. Refused as Anthropic refuses them: a prefill ending in whitespace, and a final turn that
 * calls tools (a tool_use wants its tool_result in the next user turn, not a continuation).
 */
function finalAssistantTurn(req: MessagesRequest | CountTokensRequest): string | null {
  const i = req.messages.length - 1;
  const last = req.messages[i]!;
  if (last.role !== 'assistant') return null;
  const at = `messages[${i}]`;
  let text: string;
  if (typeof last.content === 'string') text = last.content;
  else {
    text = '';
    for (const [j, b] of last.content.entries()) {
      if (b.type === 'tool_use')
        throw invalid(
          'the final assistant turn calls a tool: send its tool_result in a user turn after it',
          `${at}.content[${j}]`,
        );
      if (b.type === 'text') text += b.text;
    }
  }
  if (/\s$/.test(text))
    throw invalid(
      'the final assistant turn (a prefill) cannot end with trailing whitespace',
      `${at}.content`,
    );
  return at;
}

function hasBreakpoint(b: ContentBlock): boolean {
  return 'cache_control' in b && b.cache_control !== undefined && b.cache_control !== null;
}

function imageUrl(
  source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string },
) {
  return source.type === 'base64' ? `data:${source.media_type};base64,${source.data}` : source.url;
}

function toolResultText(b: Extract<ContentBlock, { type: 'tool_result' }>, at: string): string {
  let text = '';
  if (typeof b.content === 'string') text = b.content;
  else if (b.content !== undefined) {
    const texts: string[] = [];
    b.content.forEach((c, k) => {
      // A chat tool message carries text only (OpenAI and vLLM alike).
      if (c.type !== 'text')
        throw invalid('an image inside a tool_result cannot be carried to the engine', `${at}.content[${k}]`);
      texts.push(c.text);
    });
    text = texts.join('\n');
  }
  // Chat has no error flag on tool messages; the engine reads it from the text instead.
  return b.is_error === true ? `Error: ${text}` : text;
}
