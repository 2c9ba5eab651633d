// The tools of a Responses request (OpenAI's Responses API): functions, custom (freeform) tools,
// namespaces of both, and the hosted tools that run on OpenAI's servers (left out when offered,
// refused when forced: ../calls/text-door.ts); and tool_choice. Split from ./responses.ts.
import { z } from 'zod';

const nullish = <T extends z.ZodType>(t: T) => t.nullish();

// What OpenAI's tools may carry for its own tool search and programmatic callers: accepted, and
// without effect here (every tool is offered to the model, every call is a direct one).
const toolExtras = {
  defer_loading: nullish(z.boolean()).describe('Accepted; every tool is offered to the model'),
  allowed_callers: nullish(z.array(z.enum(['direct', 'programmatic']))).describe(
    'Accepted; every call here is a direct one',
  ),
};

const functionTool = z.strictObject({
  type: z.literal('function'),
  name: z.string().min(1).max(128),
  description: nullish(z.string()),
  parameters: nullish(z.record(z.string(), z.unknown())),
  strict: nullish(z.boolean()),
  output_schema: nullish(z.record(z.string(), z.unknown())).describe('Accepted without effect'),
  ...toolExtras,
});

/**
 * A custom (freeform) tool: the model calls it with raw text, not JSON, optionally in a grammar.
 * Chat engines know only JSON functions, so it reaches the engine as a function of one string
 * argument, `input`, its grammar quoted in the description (no engine here constrains decoding to
 * a Lark grammar); the call comes back as a custom_tool_call carrying that string.
 */
const customTool = z.strictObject({
  type: z.literal('custom'),
  name: z.string().min(1).max(128),
  description: nullish(z.string()),
  format: nullish(
    z.discriminatedUnion('type', [
      z.strictObject({ type: z.literal('text') }),
      z.strictObject({
        type: z.literal('grammar'),
        syntax: z.enum(['lark', 'regex']),
        definition: z.string().max(100_000),
      }),
    ]),
  ),
  ...toolExtras,
});
export type ResponsesCustomTool = z.infer<typeof customTool>;

/**
 * A namespace groups function tools under a name the model calls them by (Codex CLI sends one):
 * its functions reach the engine as `<namespace>__<name>`, and calls come back with `namespace`.
 */
const namespaceTool = z.strictObject({
  type: z.literal('namespace'),
  name: z.string().min(1).max(64),
  description: nullish(z.string()),
  tools: z.array(z.discriminatedUnion('type', [functionTool, customTool])).max(512),
});
export type ResponsesNamespaceTool = z.infer<typeof namespaceTool>;

/**
 * Tools that run on OpenAI's servers. Offered, they are not offered to the model (the call is
 * served, the header x-modelplane-tools-not-offered names them: Codex CLI offers web_search by
 * default); forced through tool_choice, a 400 naming them (../calls/text-door.ts).
 */
export const HOSTED_TOOL_TYPES = [
  'web_search',
  'web_search_2025_08_26',
  'web_search_preview',
  'web_search_preview_2025_03_11',
  'file_search',
  'computer_use_preview',
  'code_interpreter',
  'image_generation',
  'mcp',
] as const;
const isHosted = (type: string) => (HOSTED_TOOL_TYPES as readonly string[]).includes(type);

/** Function tools (alone or in namespaces) and hosted tools; any other type is a 400 naming it. */
export const tool = z.looseObject({ type: z.string() }).superRefine((t, ctx) => {
  if (isHosted(t.type)) return;
  if (t.type !== 'function' && t.type !== 'namespace' && t.type !== 'custom') {
    ctx.addIssue({
      code: 'custom',
      path: ['type'],
      message: `tool type ${JSON.stringify(t.type)} is not supported here: function, custom and namespace tools are, and hosted tools (${HOSTED_TOOL_TYPES.join(', ')}) are left out`,
    });
    return;
  }
  const parsed = (
    t.type === 'namespace' ? namespaceTool : t.type === 'custom' ? customTool : functionTool
  ).safeParse(t);
  if (!parsed.success)
    for (const issue of parsed.error.issues)
      ctx.addIssue({ ...issue, code: 'custom', message: issue.message });
});
export type ResponsesFunctionTool = z.infer<typeof functionTool>;
export type ResponsesHostedTool = { type: (typeof HOSTED_TOOL_TYPES)[number] } & Record<string, unknown>;
export type ResponsesTool =
  | ResponsesFunctionTool
  | ResponsesCustomTool
  | ResponsesNamespaceTool
  | ResponsesHostedTool;

export const toolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.strictObject({ type: z.literal('function'), name: z.string().min(1) }),
  z.strictObject({ type: z.literal('custom'), name: z.string().min(1) }),
  // Forcing a hosted tool: accepted here so that the door refuses it by name.
  z.looseObject({ type: z.enum(HOSTED_TOOL_TYPES) }),
]);
