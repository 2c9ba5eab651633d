// The tools of a Responses request (POST /v1/responses, ./responses.ts), and its tool_choice:
// what a client may offer the model, by type, and how each reaches an engine
// (../dialects/responses/request.ts).
import { z } from 'zod';

const nullish = <T extends z.ZodType>(t: T) => t.nullish();

const functionTool = z.strictObject({
  type: z.literal('function'),
  name: z.string().min(1).max(128),
  description: nullish(z.string()),
  parameters: nullish(z.record(z.string(), z.unknown())),
  strict: nullish(z.boolean()),
  defer_loading: z.boolean().optional().describe('Accepted; every tool is offered up front'),
  allowed_callers: nullish(z.array(z.string())).describe('Accepted without effect'),
});

/**
 * A custom tool takes free text (optionally in a Lark or regex grammar) instead of JSON arguments
 * (Codex CLI's `exec` takes JavaScript so). An engine is offered it as a function of one string
 * argument `input`, the grammar in its description (engines enforce JSON schemas, not grammars);
 * its calls come back as custom_tool_call items carrying that string.
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
        definition: z.string(),
      }),
    ]),
  ),
  defer_loading: z.boolean().optional().describe('Accepted; every tool is offered up front'),
  allowed_callers: nullish(z.array(z.string())).describe('Accepted without effect'),
});
export type ResponsesCustomTool = z.infer<typeof customTool>;

/**
 * A namespace groups function and custom tools under a name the model calls them by (Codex CLI
 * sends them): they reach the engine as `<namespace>__<name>`, and calls come back with `namespace`.
 */
const namespaceTool = z.strictObject({
  type: z.literal('namespace'),
  name: z.string().min(1).max(64),
  description: nullish(z.string()),
  tools: z.array(z.discriminatedUnion('type', [functionTool, customTool])).max(512),
});
export type ResponsesNamespaceTool = z.infer<typeof namespaceTool>;

/**
 * Tools this platform cannot offer a model, by type. Hosted ones run on OpenAI's servers (web
 * search, file search, code interpreter, image generation, remote MCP, tool search); the others
 * are run by the client but called in a format OpenAI's models are trained on and no engine here
 * is (computer use, local_shell, shell, apply_patch). Offered, they are not offered to the model
 * (the call is served, the header x-modelplane-tools-not-offered names them: Codex CLI offers
 * web_search by default); forced through tool_choice, a 400 naming them (../calls/text-door.ts).
 */
export const HOSTED_TOOL_TYPES = [
  'web_search',
  'web_search_2025_08_26',
  'web_search_preview',
  'web_search_preview_2025_03_11',
  'file_search',
  'computer',
  'computer_use_preview',
  'code_interpreter',
  'image_generation',
  'mcp',
  'tool_search',
  'local_shell',
  'shell',
  'apply_patch',
] as const;
const isHosted = (type: string) => (HOSTED_TOOL_TYPES as readonly string[]).includes(type);
const OWN_TOOL_TYPES = ['function', 'custom', 'namespace'] as const;

/** Function, custom and namespace tools, and those not offered; any other type is a 400 naming it. */
const tool = z.looseObject({ type: z.string() }).superRefine((t, ctx) => {
  if (isHosted(t.type)) return;
  const schema = t.type === 'function' ? functionTool : t.type === 'custom' ? customTool : namespaceTool;
  if (t.type !== 'function' && t.type !== 'custom' && t.type !== 'namespace') {
    ctx.addIssue({
      code: 'custom',
      path: ['type'],
      message: `tool type ${JSON.stringify(t.type)} is not supported here: ${OWN_TOOL_TYPES.join(', ')} tools are, and ${HOSTED_TOOL_TYPES.join(', ')} are left out`,
    });
    return;
  }
  const parsed = schema.safeParse(t);
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
export const tools = z.array(tool).max(512);

export const toolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.strictObject({ type: z.literal('function'), name: z.string().min(1) }),
  z.strictObject({ type: z.literal('custom'), name: z.string().min(1) }),
  // Forcing a hosted tool: accepted here so that the door refuses it by name.
  z.looseObject({ type: z.enum(HOSTED_TOOL_TYPES) }),
  // Offers the model only these of `tools` (each named as in tools: `{type, name}`, a hosted tool
  // by its type), `auto` or `required` among them (../dialects/responses/request.ts).
  z.strictObject({
    type: z.literal('allowed_tools'),
    mode: z.enum(['auto', 'required']),
    tools: z
      .array(z.looseObject({ type: z.string().min(1), name: z.string().min(1).optional() }))
      .min(1)
      .max(512),
  }),
]);
