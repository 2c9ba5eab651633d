// Chat completion → Responses response object, the direction an answer comes back from an engine.
// Pure; the streamed form of the same mapping is ./stream.ts, which ends in the same object.
import { newLongId } from '../../../core/ids.ts';
import type { ResponsesRequest } from '../../schemas/responses.ts';
import type { CallCost, TextUsage } from '../../usage.ts';
import { customInput, type DeclaredTool } from './custom-tools.ts';

// Ids from the pooled generator (core/ids), not a crypto call each.
export const responseId = (): string => newLongId('resp');
export const itemId = (prefix: 'msg' | 'fc' | 'ctc' | 'rs'): string => newLongId(prefix);

export type OutputItem =
  | {
      type: 'reasoning';
      id: string;
      /** The reasoning again, when the request asked for a summary (Echo.summarised). */
      summary: { type: 'summary_text'; text: string }[];
      content: { type: 'reasoning_text'; text: string }[];
      status?: 'completed' | 'in_progress';
    }
  | {
      type: 'message';
      id: string;
      role: 'assistant';
      status: 'completed' | 'in_progress' | 'incomplete';
      content: { type: 'output_text'; text: string; annotations: never[]; logprobs: never[] }[];
    }
  | {
      type: 'function_call';
      id: string;
      call_id: string;
      name: string;
      arguments: string;
      status: 'completed' | 'in_progress' | 'incomplete';
      namespace?: string;
    }
  | {
      type: 'custom_tool_call';
      id: string;
      call_id: string;
      name: string;
      input: string;
      status: 'completed' | 'in_progress' | 'incomplete';
      namespace?: string;
    };

export interface ResponsesUsage {
  input_tokens: number;
  /** cache_write_tokens: required by OpenAI's schema; engines report no cache writes, so 0. */
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
  /** What the call cost (../../usage.ts CallCost): on a finished response. */
  cost?: string;
  currency?: string;
}

/** Billed usage in this dialect; reasoning tokens as the engine reported them (0 when it did not). */
export function responsesUsage(u: TextUsage): ResponsesUsage {
  return {
    input_tokens: u.inputTokens,
    input_tokens_details: { cached_tokens: u.cachedTokens, cache_write_tokens: 0 },
    output_tokens: u.outputTokens,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens ?? 0 },
    total_tokens: u.inputTokens + u.outputTokens,
  };
}

/** queued and cancelled: a background response's (../../calls/background-responses.ts). */
export type Status = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

/** What a response echoes of its request, fixed when the call starts. */
export interface Echo {
  id: string;
  createdAt: number;
  model: string;
  req: ResponsesRequest;
  /** What the response is made for (the request's max_output_tokens, or the default). */
  maxOutputTokens: number;
  /** Tools in namespaces and custom tools, by the name the engine calls them. */
  declared: ReadonlyMap<string, DeclaredTool>;
  /**
   * Whether the request asked for a reasoning summary (reasoning.summary, or the deprecated
   * generate_summary): the reasoning is then given as the summary too.
   */
  summarised: boolean;
  /** Run as a background job (the request's background: true). */
  background: boolean;
}

export function echoOf(
  req: ResponsesRequest,
  model: string,
  maxOutputTokens: number,
  declared: ReadonlyMap<string, DeclaredTool>,
): Echo {
  return {
    id: responseId(),
    createdAt: Math.floor(Date.now() / 1000),
    model,
    req,
    maxOutputTokens,
    declared,
    summarised: (req.reasoning?.summary ?? req.reasoning?.generate_summary) != null,
    background: req.background === true,
  };
}

/** A call's name and namespace as the client declared them (the engine knows one flat name). */
export function calledName(e: Echo, engineName: string): { name: string; namespace?: string } {
  const d = e.declared.get(engineName);
  if (d === undefined) return { name: engineName };
  return d.namespace === undefined ? { name: d.name } : { name: d.name, namespace: d.namespace };
}

/** The output item of one engine tool call: a function_call, or a custom tool's call. */
export function callItem(
  e: Echo,
  engineName: string,
  callId: string,
  args: string,
  status: 'completed' | 'in_progress' | 'incomplete',
): Extract<OutputItem, { type: 'function_call' | 'custom_tool_call' }> {
  if (e.declared.get(engineName)?.custom)
    return {
      type: 'custom_tool_call',
      id: itemId('ctc'),
      call_id: callId,
      ...calledName(e, engineName),
      input: status === 'in_progress' ? '' : customInput(args),
      status,
    };
  return {
    type: 'function_call',
    id: itemId('fc'),
    call_id: callId,
    ...calledName(e, engineName),
    arguments: args,
    status,
  };
}

/**
 * The fields of a response that its state gives (the rest echo its request): what changes while a
 * stream is made (./response-json.ts serializes only these each time).
 */
export function responseState(
  status: Status,
  output: OutputItem[],
  usage: TextUsage | null,
  error: { code: string; message: string } | null = null,
  cost: CallCost | null = null,
) {
  return {
    status,
    error,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' as const } : null,
    output,
    usage:
      usage === null ? null : cost === null ? responsesUsage(usage) : { ...responsesUsage(usage), ...cost },
    completed_at: status === 'completed' ? Math.floor(Date.now() / 1000) : null,
  };
}

/** The response object (OpenAI's `Response`), in whatever state it is in. */
export function responseObject(
  e: Echo,
  status: Status,
  output: OutputItem[],
  usage: TextUsage | null,
  error: { code: string; message: string } | null = null,
  cost: CallCost | null = null,
) {
  const r = e.req;
  const s = responseState(status, output, usage, error, cost);
  return {
    id: e.id,
    object: 'response' as const,
    created_at: e.createdAt,
    status: s.status,
    background: e.background,
    error: s.error,
    incomplete_details: s.incomplete_details,
    instructions: r.instructions ?? null,
    max_output_tokens: r.max_output_tokens ?? null,
    metadata: r.metadata ?? {},
    model: e.model,
    output: s.output,
    parallel_tool_calls: r.parallel_tool_calls ?? true,
    previous_response_id: r.previous_response_id ?? null,
    reasoning: { effort: r.reasoning?.effort ?? null, summary: r.reasoning?.summary ?? null },
    service_tier: 'default',
    temperature: r.temperature ?? 1,
    text: { format: r.text?.format ?? { type: 'text' }, verbosity: r.text?.verbosity ?? 'medium' },
    tool_choice: r.tool_choice ?? 'auto',
    tools: (r.tools ?? []).map((t) => (t.type === 'function' ? { ...t, strict: t.strict ?? null } : t)),
    top_p: r.top_p ?? 1,
    truncation: 'disabled',
    ...(s.usage === null ? {} : { usage: s.usage }),
    completed_at: s.completed_at,
    prompt_cache_key: r.prompt_cache_key ?? null,
    safety_identifier: r.safety_identifier ?? null,
    // Only the fields of OpenAI's Response type (the SDKs' types have no `store`, and `user` only
    // when it was given).
    ...(r.user != null ? { user: r.user } : {}),
  };
}
export type ResponseObject = ReturnType<typeof responseObject>;

interface ChatChoice {
  message?: {
    content?: unknown;
    reasoning_content?: unknown;
    reasoning?: unknown;
    tool_calls?: { id?: unknown; function?: { name?: unknown; arguments?: unknown } }[];
  };
  finish_reason?: unknown;
}

/** The output items of a whole chat completion, in the order they were generated. */
export function outputOf(
  completion: { choices?: ChatChoice[] },
  e: Echo,
): { output: OutputItem[]; status: Status } {
  const choice = completion.choices?.[0] ?? {};
  const msg = choice.message ?? {};
  const incomplete = choice.finish_reason === 'length';
  const output: OutputItem[] = [];
  const reasoning = typeof msg.reasoning_content === 'string' ? msg.reasoning_content : msg.reasoning;
  if (typeof reasoning === 'string' && reasoning !== '')
    output.push({
      type: 'reasoning',
      id: itemId('rs'),
      summary: e.summarised ? [{ type: 'summary_text', text: reasoning }] : [],
      content: [{ type: 'reasoning_text', text: reasoning }],
    });
  if (typeof msg.content === 'string' && msg.content !== '')
    output.push({
      type: 'message',
      id: itemId('msg'),
      role: 'assistant',
      status: incomplete ? 'incomplete' : 'completed',
      content: [{ type: 'output_text', text: msg.content, annotations: [], logprobs: [] }],
    });
  for (const call of Array.isArray(msg.tool_calls) ? msg.tool_calls : [])
    output.push(
      callItem(
        e,
        typeof call.function?.name === 'string' ? call.function.name : '',
        typeof call.id === 'string' ? call.id : newLongId('call'),
        typeof call.function?.arguments === 'string' ? call.function.arguments : '',
        incomplete ? 'incomplete' : 'completed',
      ),
    );
  return { output, status: incomplete ? 'incomplete' : 'completed' };
}
