// A response object's JSON written as text around the few values that vary, not built as an
// object and serialized. A stream sends the whole response three times (response.created,
// response.in_progress, and the final one), and most of it — instructions, tools (Codex sends a
// dozen or more, each with its JSON schema), text format, metadata — is the request echoed: that
// part is written once per call, only the state (status, error, output, usage, …) each time, and
// request values that are absent or default are constant text, not serialized at all. The bytes
// are JSON.stringify(responseObject(…)) (./response.ts, the response's one definition), key for
// key in its order: response-json.test.ts holds the two together for every field and state.
import type { CallCost, TextUsage } from '../../usage.ts';
import type { Echo, OutputItem, Status } from './response.ts';

const json = JSON.stringify;
/** A value as JSON, `fallback` (already JSON) when it is null or absent. */
const or = (v: unknown, fallback: string): string => (v == null ? fallback : json(v));

export class ResponseJson {
  /** The JSON around the state's values: `{"id":…,"status":`, `,"background":…,"error":`, … `}`. */
  private readonly head: string;
  private readonly background: string;
  private readonly beforeOutput: string;
  private readonly beforeUsage: string;
  private readonly tail: string;

  constructor(e: Echo) {
    const r = e.req;
    this.head = `{"id":${json(e.id)},"object":"response","created_at":${json(e.createdAt)},"status":`;
    this.background = `,"background":${e.background},"error":`;
    this.beforeOutput =
      `,"instructions":${or(r.instructions, 'null')},"max_output_tokens":${or(r.max_output_tokens, 'null')}` +
      `,"metadata":${or(r.metadata, '{}')},"model":${json(e.model)},"output":`;
    const tools =
      r.tools == null || r.tools.length === 0
        ? '[]'
        : json(r.tools.map((t) => (t.type === 'function' ? { ...t, strict: t.strict ?? null } : t)));
    this.beforeUsage =
      `,"parallel_tool_calls":${or(r.parallel_tool_calls, 'true')},"previous_response_id":${or(r.previous_response_id, 'null')}` +
      `,"reasoning":{"effort":${or(r.reasoning?.effort, 'null')},"summary":${or(r.reasoning?.summary, 'null')}}` +
      `,"service_tier":"default","temperature":${or(r.temperature, '1')}` +
      `,"text":{"format":${or(r.text?.format, '{"type":"text"}')},"verbosity":${or(r.text?.verbosity, '"medium"')}}` +
      `,"tool_choice":${or(r.tool_choice, '"auto"')},"tools":${tools},"top_p":${or(r.top_p, '1')}` +
      ',"truncation":"disabled"';
    this.tail =
      `,"prompt_cache_key":${or(r.prompt_cache_key, 'null')},"safety_identifier":${or(r.safety_identifier, 'null')}` +
      `${r.user != null ? `,"user":${json(r.user)}` : ''}}`;
  }

  /**
   * JSON.stringify(responseObject(echo, …)); `outputJson` is the output's JSON when the caller has
   * it already (each item was sent whole as it closed).
   */
  render(
    status: Status,
    output: OutputItem[],
    usage: TextUsage | null,
    error: { code: string; message: string } | null = null,
    cost: CallCost | null = null,
    outputJson?: string,
  ): string {
    return (
      `${this.head}"${status}"${this.background}${error === null ? 'null' : json(error)}` +
      `,"incomplete_details":${status === 'incomplete' ? '{"reason":"max_output_tokens"}' : 'null'}` +
      this.beforeOutput +
      (outputJson ?? json(output)) +
      this.beforeUsage +
      // No usage yet (created, in progress, queued): absent, as OpenAI's schema has no null for it.
      (usage === null ? '' : `,"usage":${usageJson(usage, cost)}`) +
      `,"completed_at":${status === 'completed' ? Math.floor(Date.now() / 1000) : 'null'}` +
      this.tail
    );
  }
}

/** responsesUsage(usage) with the cost beside it (./response.ts responseState), as JSON. */
function usageJson(u: TextUsage, cost: CallCost | null): string {
  const c = cost === null ? '' : `,"cost":${json(cost.cost)},"currency":${json(cost.currency)}`;
  return `{"input_tokens":${u.inputTokens},"input_tokens_details":{"cached_tokens":${u.cachedTokens},"cache_write_tokens":0},"output_tokens":${u.outputTokens},"output_tokens_details":{"reasoning_tokens":${u.reasoningTokens ?? 0}},"total_tokens":${u.inputTokens + u.outputTokens}${c}}`;
}
