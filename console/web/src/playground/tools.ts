// Function tools in the Playground (issue 37 item 3): the tools a person writes, in either
// dialect's shape, sent in the chosen dialect's (chat `tools` + `tool_choice`; Messages `tools`
// with `input_schema` + `tool_choice`), and the tool calls a streamed reply makes, gathered from
// their deltas and shown in the reply as a name and its JSON arguments. Pure, so it is tested
// without a browser or a model that calls tools.

export type ToolChoice = 'auto' | 'required' | 'none';

/** params.ts's Dialect, spelled out here: params.ts imports this file. */
type Dialect = 'chat' | 'messages';

export interface FunctionTool {
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The tools' text as functions, or why it is not. Each item is OpenAI's `{type: "function",
 * function: {name, description, parameters}}` or Anthropic's `{name, description, input_schema}`
 * (or the bare `{name, parameters}`). Empty text: no tools.
 */
export function parseTools(text: string): { tools: FunctionTool[] } | { error: string } {
  if (text.trim() === '') return { tools: [] };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return { error: `The tools are not JSON: ${(err as Error).message}` };
  }
  if (!Array.isArray(v)) return { error: 'The tools must be a JSON array of functions.' };
  const tools: FunctionTool[] = [];
  for (const [i, item] of v.entries()) {
    const f = isObject(item) && isObject(item.function) ? item.function : item;
    if (!isObject(f) || typeof f.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(f.name))
      return { error: `Tool ${i + 1} needs a name of letters, digits, _ or - (at most 64).` };
    const parameters = f.parameters ?? f.input_schema ?? { type: 'object', properties: {} };
    if (!isObject(parameters)) return { error: `Tool ${i + 1}'s parameters must be a JSON schema object.` };
    tools.push({
      name: f.name,
      ...(typeof f.description === 'string' ? { description: f.description } : {}),
      parameters,
    });
  }
  return { tools };
}

/** The body fields of the tools in the dialect's own names; none when there are none. */
export function toolFields(
  tools: FunctionTool[],
  choice: ToolChoice,
  dialect: Dialect,
): Record<string, unknown> {
  if (tools.length === 0) return {};
  if (dialect === 'messages')
    return {
      tools: tools.map((t) => ({
        name: t.name,
        ...(t.description ? { description: t.description } : {}),
        input_schema: t.parameters,
      })),
      tool_choice: { type: choice === 'required' ? 'any' : choice },
    };
  return {
    tools: tools.map((t) => ({ type: 'function', function: t })),
    tool_choice: choice,
  };
}

/** The tool calls of one streamed reply, gathered from either dialect's deltas. */
export class ToolCalls {
  private readonly calls: { name: string; args: string }[] = [];

  /** A chat completions delta's `tool_calls` (name once, arguments in pieces, by index). */
  chatDelta(deltas: unknown): boolean {
    if (!Array.isArray(deltas)) return false;
    for (const d of deltas) {
      if (!isObject(d)) continue;
      const index = typeof d.index === 'number' ? d.index : this.calls.length;
      if (!this.calls[index]) this.calls[index] = { name: '', args: '' };
      const call = this.calls[index];
      const f = isObject(d.function) ? d.function : {};
      if (typeof f.name === 'string') call.name += f.name;
      if (typeof f.arguments === 'string') call.args += f.arguments;
    }
    return deltas.length > 0;
  }

  /** A Messages stream event: a tool_use block starts, its input_json_delta pieces follow. */
  messagesEvent(e: Record<string, unknown>): boolean {
    if (
      e.type === 'content_block_start' &&
      isObject(e.content_block) &&
      e.content_block.type === 'tool_use'
    ) {
      this.calls.push({ name: String(e.content_block.name ?? ''), args: '' });
      return true;
    }
    if (e.type === 'content_block_delta' && isObject(e.delta) && e.delta.type === 'input_json_delta') {
      const last = this.calls.at(-1);
      if (last && typeof e.delta.partial_json === 'string') last.args += e.delta.partial_json;
      return true;
    }
    return false;
  }

  /** The calls as markdown for the reply: each name, then its arguments as a JSON block. */
  markdown(): string {
    return this.calls
      .map((c) => {
        let args = c.args || '{}';
        try {
          args = JSON.stringify(JSON.parse(args), null, 2);
        } catch {
          // A stream stopped mid-arguments: shown as it came.
        }
        return `\n\n**Tool call:** \`${c.name}\`\n\n\`\`\`json\n${args}\n\`\`\`\n`;
      })
      .join('');
  }
}
