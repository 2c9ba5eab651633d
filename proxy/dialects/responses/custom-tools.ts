// Custom (freeform) tools on a chat engine. OpenAI's model calls a custom tool with raw text —
// code, a patch, a query — optionally shaped by a Lark or regex grammar; a chat-completions engine
// calls only JSON functions. So a custom tool is offered as a function of one string argument,
// `input` (its grammar quoted in the description: no engine here constrains decoding to a Lark
// grammar), and the function call that comes back is given to the client as a custom_tool_call
// carrying that string. Pure.
import type { ResponsesCustomTool } from '../../schemas/responses.ts';

/** A tool as the client declared it, by the name the engine calls it. */
export interface DeclaredTool {
  name: string;
  namespace?: string;
  /** A custom tool: its calls carry `input` text, not JSON arguments. */
  custom?: true;
}

/** Engine name → the declared tool, for every tool whose call the response must name otherwise. */
export type DeclaredTools = Map<string, DeclaredTool>;

/** The chat function standing for a custom tool. */
export function customAsFunction(
  engineName: string,
  t: ResponsesCustomTool,
  namespaceDescription?: string | null,
) {
  const format = t.format;
  const grammar =
    format?.type === 'grammar'
      ? `\n\nThe input must match this ${format.syntax === 'lark' ? 'Lark grammar' : 'regular expression'}:\n${format.definition}`
      : '';
  const description = [namespaceDescription, t.description].filter((d) => d != null && d !== '').join('\n\n');
  return {
    type: 'function',
    function: {
      name: engineName,
      description: `${description}${grammar}`.trim() || `The ${t.name} tool, called with raw text.`,
      parameters: {
        type: 'object',
        properties: { input: { type: 'string', description: 'The raw input of the tool.' } },
        required: ['input'],
        additionalProperties: false,
      },
    },
  };
}

/** The raw text of a custom tool's call from the engine's JSON arguments (or the arguments as they are). */
export function customInput(args: string): string {
  try {
    const parsed = JSON.parse(args) as unknown;
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      typeof (parsed as { input?: unknown }).input === 'string'
    )
      return (parsed as { input: string }).input;
  } catch {
    // Not JSON: the engine wrote the text itself.
  }
  return args;
}

/** A custom tool call passed back, as the engine's JSON arguments. */
export const customArguments = (input: string): string => JSON.stringify({ input });
