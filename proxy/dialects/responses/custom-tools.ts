// Custom tools (free text in, optionally in a grammar) on engines that know only JSON-argument
// functions: offered as a function of one string argument `input`, the grammar stated in its
// description; a call's arguments are unwrapped back into the text a custom_tool_call carries,
// and a custom_tool_call passed back is wrapped again. Pure.
import type { ResponsesCustomTool } from '../../schemas/responses.ts';

/** What a tool the engine calls by one flat name is to the client. */
export interface DeclaredTool {
  name: string;
  namespace?: string;
  /** A custom tool: its calls are custom_tool_call items with `input` text. */
  custom?: true;
}

/** The chat function an engine is offered for a custom tool. */
export function customAsFunction(engineName: string, t: ResponsesCustomTool, context: string | null) {
  const format =
    t.format?.type === 'grammar'
      ? `The input must match this ${t.format.syntax === 'lark' ? 'Lark grammar' : 'regular expression'}:\n${t.format.definition}`
      : null;
  const description = [context, t.description, format].filter((d) => d != null && d !== '').join('\n\n');
  return {
    type: 'function',
    function: {
      name: engineName,
      ...(description !== '' ? { description } : {}),
      parameters: {
        type: 'object',
        properties: {
          input: { type: 'string', description: 'The raw input text, as is (not JSON-encoded)' },
        },
        required: ['input'],
        additionalProperties: false,
      },
    },
  };
}

/**
 * The text of a custom tool call from the engine's arguments: `input` of the JSON object it was
 * asked for; arguments that are not such an object (a model that ignored the schema) are the text.
 */
export function customInput(args: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    if (
      parsed !== null &&
      typeof parsed === 'object' &&
      typeof (parsed as { input?: unknown }).input === 'string'
    )
      return (parsed as { input: string }).input;
  } catch {
    // not JSON: the text as generated
  }
  return args;
}

/** A custom_tool_call's input as the arguments the engine's function call had. */
export const customArguments = (input: string): string => JSON.stringify({ input });
