// Responses request → chat-completions request, the direction a call goes to an engine. Pure: a
// validated body (and the stored turns a previous_response_id continues) in, the chat messages
// and fields out, or a 400 naming what cannot be carried. The other direction is ./response.ts
// and ./stream.ts.
import { ApiError } from '../../../core/errors.ts';
import type {
  ResponsesItem,
  ResponsesMessage,
  ResponsesPart,
  ResponsesRequest,
  ResponsesTool,
} from '../../schemas/responses.ts';
import type { ChatMessage, ChatToolCall, EngineAbilities } from '../messages/request.ts';
import { fromClient } from '../origins.ts';
import { customArguments, customAsFunction, type DeclaredTool } from './custom-tools.ts';

const invalid = (message: string, param: string) => new ApiError('invalid_request', message, { param });

type ChatPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: string } };

export interface ResponsesChatForm {
  messages: ChatMessage[];
  fields: Record<string, unknown>;
  /**
   * Tools whose calls are not plain functions to the client (in a namespace, or custom), by the
   * name the engine calls them (`<namespace>__<name>`, or the custom tool's name).
   */
  declared: Map<string, DeclaredTool>;
}

/** The engine's name of a function in a namespace (chat functions have no namespaces). */
export const namespacedName = (namespace: string, name: string) => `${namespace}__${name}`;

/**
 * The whole translation. `history` is the conversation a previous_response_id continues (its
 * input and output items, oldest first), placed before this request's input; `instructions`
 * are this request's only (OpenAI does not carry earlier instructions over either).
 */
export function toChatForm(
  req: ResponsesRequest,
  can: EngineAbilities,
  history: readonly ResponsesItem[] = [],
): ResponsesChatForm {
  const messages: ChatMessage[] = [];
  if (req.instructions != null && req.instructions !== '')
    messages.push({ role: 'system', content: req.instructions });
  const items: ResponsesItem[] =
    typeof req.input === 'string' ? [{ role: 'user', content: req.input }] : req.input;
  // additional_tools items add to the request's tools: a chat engine is offered every tool up
  // front (it has no tools that appear mid-conversation).
  const offered: ResponsesTool[] = [...((req.tools ?? []) as ResponsesTool[])];
  history.forEach((item, i) => {
    addItem(messages, offered, item, `previous_response_id (item ${i})`);
  });
  items.forEach((item, i) => {
    addItem(messages, offered, item, `input[${i}]`);
  });
  if (messages.length === 0 || messages.every((m) => m.role === 'system'))
    throw invalid('input has no message for the model to answer', 'input');
  const { fields, declared } = chatFields(req, can, offered);
  return { messages, fields, declared };
}

/** A call passed back, as the assistant's tool call (parallel calls are consecutive items). */
function addCall(out: ChatMessage[], call: ChatToolCall): void {
  const last = out.at(-1);
  if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
  else out.push({ role: 'assistant', content: null, tool_calls: [call] });
}

const engineName = (item: { name: string; namespace?: string | undefined }) =>
  item.namespace === undefined ? item.name : namespacedName(item.namespace, item.name);

function addItem(out: ChatMessage[], offered: ResponsesTool[], item: ResponsesItem, at: string): void {
  switch (item.type) {
    case 'additional_tools':
      offered.push(...(item.tools as ResponsesTool[]));
      return;
    case 'custom_tool_call':
      addCall(out, {
        id: item.call_id,
        type: 'function',
        function: { name: engineName(item), arguments: customArguments(item.input) },
      });
      return;
    case 'function_call':
      addCall(out, {
        id: item.call_id,
        type: 'function',
        function: { name: engineName(item), arguments: item.arguments },
      });
      return;
    case 'function_call_output':
    case 'custom_tool_call_output':
      out.push({
        role: 'tool',
        tool_call_id: item.call_id,
        content: typeof item.output === 'string' ? item.output : item.output.map((p) => p.text).join('\n'),
      });
      return;
    // Reasoning passed back is not part of the prompt: reasoning models' chat templates drop an
    // earlier turn's reasoning too (vLLM, Qwen3, DeepSeek-R1), so nothing the engine reads is lost.
    case 'reasoning':
      return;
    default:
      out.push(messageOf(item, at));
  }
}

function messageOf(item: ResponsesMessage, at: string): ChatMessage {
  const role = item.role === 'developer' ? 'system' : item.role;
  if (typeof item.content === 'string') {
    if (role === 'assistant') return { role, content: item.content };
    return role === 'system' ? { role, content: item.content } : { role, content: item.content };
  }
  const parts = item.content.map((p, j) => chatPart(p, role, `${at}.content[${j}]`));
  const onlyText = parts.every((p) => p.type === 'text');
  if (role === 'user')
    return { role, content: onlyText ? parts.map((p) => (p as { text: string }).text).join('\n') : parts };
  if (!onlyText) throw invalid(`an image can only appear in a user message`, `${at}.content`);
  const text = parts.map((p) => (p as { text: string }).text).join(role === 'system' ? '\n\n' : '');
  return role === 'system' ? { role, content: text } : { role, content: text };
}

function chatPart(p: ResponsesPart, role: string, at: string): ChatPart {
  switch (p.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: p.text };
    case 'refusal':
      return { type: 'text', text: p.refusal };
    case 'input_image': {
      if (role !== 'user') throw invalid('an image can only appear in a user message', at);
      if (p.image_url == null)
        throw invalid('an input_image needs image_url (file_id is not supported here)', at);
      const detail = p.detail === 'low' || p.detail === 'high' || p.detail === 'auto' ? p.detail : undefined;
      // Its URL and the model's vision are the door's to check (../../calls/text-door.ts).
      return fromClient(
        { type: 'image_url', image_url: { url: p.image_url, ...(detail ? { detail } : {}) } },
        { part: at, url: `${at}.image_url` },
      );
    }
  }
}

/**
 * Tools, choice, sampling, format and reasoning, named as chat names them. `tools` are the ones
 * offered: the request's and its additional_tools items'.
 */
export function chatFields(
  req: ResponsesRequest,
  can: EngineAbilities,
  offered: readonly ResponsesTool[] = (req.tools ?? []) as ResponsesTool[],
): { fields: Record<string, unknown>; declared: Map<string, DeclaredTool> } {
  const choice = req.tool_choice;
  const allowed = typeof choice === 'object' && choice?.type === 'allowed_tools' ? choice : null;
  const tools = allowed === null ? offered : allowedTools(offered, allowed.tools);
  const fields: Record<string, unknown> = {};
  const declared = new Map<string, DeclaredTool>();
  // A model without tools is the door's to refuse (../../calls/text-door.ts).
  if (tools.length > 0) {
    fields.tools = tools.flatMap((t): unknown[] => {
      if (t.type === 'function') return [chatFunction(t.name, t)];
      if (t.type === 'custom') {
        declared.set(t.name, { name: t.name, custom: true });
        return [customAsFunction(t.name, t, null)];
      }
      // A hosted tool stays what it is: the door leaves it out, and says so.
      if (t.type !== 'namespace') return [{ type: t.type }];
      return t.tools.map((f) => {
        const name = namespacedName(t.name, f.name);
        const context = t.description != null && t.description !== '' ? t.description : null;
        if (f.type === 'custom') {
          declared.set(name, { namespace: t.name, name: f.name, custom: true });
          return customAsFunction(name, f, context);
        }
        declared.set(name, { namespace: t.name, name: f.name });
        const description = [context, f.description].filter((d) => d != null && d !== '').join('\n\n');
        return chatFunction(name, { ...f, description });
      });
    });
  }
  if (allowed !== null) {
    fields.tool_choice = allowed.mode;
  } else if (choice != null) {
    if (typeof choice === 'object' && choice.type !== 'function' && choice.type !== 'custom') {
      fields.tool_choice = { type: choice.type }; // forcing a hosted tool: the door refuses it
    } else if (typeof choice === 'object') {
      if (!tools.some((t) => t.type === choice.type && t.name === choice.name))
        throw invalid(
          `tool_choice names the ${choice.type} tool ${JSON.stringify(choice.name)}, which is not in tools`,
          'tool_choice.name',
        );
      fields.tool_choice = { type: 'function', function: { name: choice.name } };
    } else {
      if (choice === 'required' && tools.length === 0)
        throw invalid('tool_choice required needs tools', 'tool_choice');
      if (tools.length > 0) fields.tool_choice = choice;
    }
  }
  if (req.parallel_tool_calls != null && tools.length > 0)
    fields.parallel_tool_calls = req.parallel_tool_calls;
  if (req.temperature != null) fields.temperature = req.temperature;
  if (req.top_p != null) fields.top_p = req.top_p;
  const user = req.user ?? req.safety_identifier;
  if (user != null) fields.user = user;
  const format = req.text?.format;
  if (format?.type === 'json_object') fields.response_format = { type: 'json_object' };
  else if (format?.type === 'json_schema')
    fields.response_format = {
      type: 'json_schema',
      json_schema: {
        name: format.name,
        schema: format.schema,
        ...(format.description != null ? { description: format.description } : {}),
        ...(format.strict != null ? { strict: format.strict } : {}),
      },
    };
  // A hint where the model does not reason (Codex sends one whatever the model); vLLM's scale
  // for a model that does is low / medium / high, and `none` switches thinking off.
  const effort = req.reasoning?.effort;
  if (effort != null && can.reasoning) {
    if (effort === 'none') fields.chat_template_kwargs = { enable_thinking: false };
    else
      fields.reasoning_effort =
        effort === 'minimal' ? 'low' : effort === 'xhigh' || effort === 'max' ? 'high' : effort;
  }
  return { fields, declared };
}

/**
 * The tools a `tool_choice: {type: "allowed_tools"}` leaves on offer, in the order of `tools`: each
 * entry names a tool of `tools` by type and name (a hosted tool by its type alone); one naming
 * none is a 400.
 */
function allowedTools(
  tools: readonly ResponsesTool[],
  list: readonly { type: string; name?: string | undefined }[],
): ResponsesTool[] {
  const nameOf = (t: ResponsesTool) => ('name' in t && typeof t.name === 'string' ? t.name : undefined);
  const matches = (t: ResponsesTool, e: (typeof list)[number]) =>
    t.type === e.type && (nameOf(t) === undefined || nameOf(t) === e.name);
  list.forEach((e, i) => {
    if (!tools.some((t) => matches(t, e)))
      throw invalid(
        `tool_choice.tools[${i}] names the ${e.type} tool${e.name === undefined ? '' : ` ${JSON.stringify(e.name)}`}, which is not in tools`,
        `tool_choice.tools[${i}]`,
      );
  });
  return tools.filter((t) => list.some((e) => matches(t, e)));
}

function chatFunction(
  name: string,
  t: { description?: string | null; parameters?: Record<string, unknown> | null; strict?: boolean | null },
) {
  return {
    type: 'function',
    function: {
      name,
      ...(t.description != null && t.description !== '' ? { description: t.description } : {}),
      parameters: t.parameters ?? { type: 'object', properties: {} },
      ...(t.strict != null ? { strict: t.strict } : {}),
    },
  };
}
