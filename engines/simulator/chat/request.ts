// Validation of a chat-completions request into the few fields the simulator acts on. Errors name
// the offending field, as OpenAI and vLLM do.

import { badRequest } from '../http.ts';

export interface ToolDefinition {
  name: string;
  parameters: unknown;
}

export type ToolChoice = 'none' | 'auto' | 'required' | { name: string };

export interface ChatMessage {
  role: string;
  /** Text of the message: string content, text parts, and an assistant's tool-call arguments. */
  text: string;
  /** Image parts (`image_url`): each costs imageTokens prompt tokens. */
  images: number;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream: boolean;
  includeUsage: boolean;
  /** vLLM: usage on every chunk; only when include_usage is also true. */
  continuousUsage: boolean;
  maxTokens: number | null;
  minTokens: number;
  ignoreEos: boolean;
  n: number;
  stop: string[];
  seed: number | null;
  tools: ToolDefinition[];
  toolChoice: ToolChoice;
  parallelToolCalls: boolean;
  /** vLLM: the template opens the reply's header after the messages (default true). */
  addGenerationPrompt: boolean;
  /** vLLM: the final (assistant) message is left open and the reply continues it (a prefill). */
  continueFinalMessage: boolean;
  /**
   * Structured output (response_format json_schema, or json_object as the schema {}): the reply
   * is JSON made from the schema, as a guided-decoding engine's is; null for free text.
   */
  jsonSchema: unknown;
  /**
   * A reasoning model asked to think (vLLM: chat_template_kwargs.enable_thinking, or a
   * reasoning_effort without thinking switched off): the reply starts with reasoning (vLLM 0.32's field; earlier reasoning_content).
   */
  thinks: boolean;
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function optionalInt(body: Record<string, unknown>, key: string, min: number, max: number): number | null {
  const v = body[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw badRequest(`${key} must be an integer between ${min} and ${max}`, key);
  }
  return v;
}

function optionalBool(body: Record<string, unknown>, key: string): boolean | null {
  const v = body[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'boolean') throw badRequest(`${key} must be a boolean`, key);
  return v;
}

function imageParts(m: Record<string, unknown>): number {
  if (!Array.isArray(m.content)) return 0;
  return m.content.filter((part) => isObject(part) && part.type === 'image_url').length;
}

function messageText(m: Record<string, unknown>, i: number): string {
  const parts: string[] = [];
  const content = m.content;
  if (typeof content === 'string') parts.push(content);
  else if (Array.isArray(content)) {
    content.forEach((part, j) => {
      if (!isObject(part) || typeof part.type !== 'string') {
        throw badRequest('content parts must be objects with a type', `messages[${i}].content[${j}]`);
      }
      if (part.type === 'text') {
        if (typeof part.text !== 'string')
          throw badRequest('text part needs text', `messages[${i}].content[${j}].text`);
        parts.push(part.text);
      }
    });
  } else if (content !== null && content !== undefined) {
    throw badRequest('content must be a string, an array of parts or null', `messages[${i}].content`);
  } else if (m.role !== 'assistant') {
    throw badRequest('content is required', `messages[${i}].content`);
  }
  if (Array.isArray(m.tool_calls)) {
    for (const call of m.tool_calls) {
      const fn = isObject(call) && isObject(call.function) ? call.function : null;
      if (fn && typeof fn.name === 'string') parts.push(`${fn.name} ${String(fn.arguments ?? '')}`);
    }
  }
  return parts.join('\n');
}

function parseMessages(raw: unknown): ChatMessage[] {
  if (!Array.isArray(raw) || raw.length === 0)
    throw badRequest('messages must be a non-empty array', 'messages');
  return raw.map((m, i) => {
    if (!isObject(m)) throw badRequest('each message must be an object', `messages[${i}]`);
    if (typeof m.role !== 'string' || !ROLES.has(m.role)) {
      throw badRequest(`role must be one of ${[...ROLES].join(', ')}`, `messages[${i}].role`);
    }
    if (m.role === 'tool' && typeof m.tool_call_id !== 'string') {
      throw badRequest('tool messages need tool_call_id', `messages[${i}].tool_call_id`);
    }
    return { role: m.role, text: messageText(m, i), images: imageParts(m) };
  });
}

function parseTools(raw: unknown): ToolDefinition[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw badRequest('tools must be an array', 'tools');
  return raw.map((t, i) => {
    if (
      !isObject(t) ||
      t.type !== 'function' ||
      !isObject(t.function) ||
      typeof t.function.name !== 'string'
    ) {
      throw badRequest('each tool must be {type: "function", function: {name, parameters}}', `tools[${i}]`);
    }
    return { name: t.function.name, parameters: t.function.parameters ?? { type: 'object', properties: {} } };
  });
}

function parseToolChoice(raw: unknown, tools: ToolDefinition[]): ToolChoice {
  if (raw === undefined || raw === null) return tools.length > 0 ? 'auto' : 'none';
  if (raw === 'none' || raw === 'auto' || raw === 'required') {
    if (raw !== 'none' && tools.length === 0)
      throw badRequest(`tool_choice ${raw} needs tools`, 'tool_choice');
    return raw;
  }
  if (isObject(raw) && isObject(raw.function) && typeof raw.function.name === 'string') {
    const name = raw.function.name;
    if (!tools.some((t) => t.name === name)) throw badRequest(`no tool named ${name}`, 'tool_choice');
    return { name };
  }
  throw badRequest(
    'tool_choice must be none, auto, required or {type: "function", function: {name}}',
    'tool_choice',
  );
}

/** vLLM's sampling-parameter checks the simulator mirrors (no effect on its text): a 400 naming the field. */
function checkSampling(body: Record<string, unknown>): void {
  const t = body.temperature;
  if (t !== undefined && t !== null && !(typeof t === 'number' && t >= 0))
    throw badRequest(`temperature must be non-negative, got ${String(t)}.`, 'temperature');
  const p = body.top_p;
  if (p !== undefined && p !== null && !(typeof p === 'number' && p > 0 && p <= 1))
    throw badRequest(`top_p must be in (0, 1], got ${String(p)}.`, 'top_p');
}

export function parseChatRequest(body: Record<string, unknown>): ChatRequest {
  if (typeof body.model !== 'string' || body.model === '') throw badRequest('model is required', 'model');
  checkSampling(body);
  const messages = parseMessages(body.messages);
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
    throw badRequest('stream must be a boolean', 'stream');
  }
  const stream = body.stream === true;
  const so = body.stream_options;
  if (so !== undefined && so !== null) {
    if (!stream) throw badRequest('stream_options is only allowed when stream is true', 'stream_options');
    if (!isObject(so)) throw badRequest('stream_options must be an object', 'stream_options');
  }
  const includeUsage = isObject(so) && so.include_usage === true;
  const maxTokens =
    optionalInt(body, 'max_completion_tokens', 1, Number.MAX_SAFE_INTEGER) ??
    optionalInt(body, 'max_tokens', 1, Number.MAX_SAFE_INTEGER);
  const stopRaw = body.stop;
  let stop: string[] = [];
  if (typeof stopRaw === 'string') stop = [stopRaw];
  else if (Array.isArray(stopRaw) && stopRaw.every((s) => typeof s === 'string')) stop = stopRaw as string[];
  else if (stopRaw !== undefined && stopRaw !== null)
    throw badRequest('stop must be a string or strings', 'stop');
  const tools = parseTools(body.tools);
  const addGenerationPrompt = optionalBool(body, 'add_generation_prompt') ?? true;
  const continueFinalMessage = optionalBool(body, 'continue_final_message') ?? false;
  if (continueFinalMessage && addGenerationPrompt)
    // vLLM's own rule: a reply cannot both continue the last message and open a new one.
    throw badRequest(
      'Cannot set both `continue_final_message` and `add_generation_prompt` to True.',
      'continue_final_message',
    );
  if (continueFinalMessage && messages.at(-1)!.role !== 'assistant')
    throw badRequest('continue_final_message needs a final assistant message to continue', 'messages');
  return {
    model: body.model,
    messages,
    stream,
    includeUsage,
    continuousUsage: includeUsage && isObject(so) && so.continuous_usage_stats === true,
    maxTokens,
    minTokens: optionalInt(body, 'min_tokens', 0, Number.MAX_SAFE_INTEGER) ?? 0,
    ignoreEos: body.ignore_eos === true,
    n: optionalInt(body, 'n', 1, 128) ?? 1,
    stop,
    seed: optionalInt(body, 'seed', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
    tools,
    toolChoice: parseToolChoice(body.tool_choice, tools),
    parallelToolCalls: body.parallel_tool_calls !== false,
    addGenerationPrompt,
    continueFinalMessage,
    jsonSchema: parseResponseFormat(body.response_format),
    thinks: thinks(body),
  };
}

function thinks(body: Record<string, unknown>): boolean {
  const kwargs = isObject(body.chat_template_kwargs) ? body.chat_template_kwargs : {};
  if (kwargs.enable_thinking === false) return false;
  return kwargs.enable_thinking === true || typeof body.reasoning_effort === 'string';
}

function parseResponseFormat(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  if (!isObject(v)) throw badRequest('response_format must be an object', 'response_format');
  if (v.type === 'text') return null;
  if (v.type === 'json_object') return { type: 'object' };
  if (v.type === 'json_schema' && isObject(v.json_schema) && isObject(v.json_schema.schema))
    return v.json_schema.schema;
  throw badRequest(
    'response_format must be text, json_object or json_schema with a schema',
    'response_format',
  );
}
