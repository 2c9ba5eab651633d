// The sampling parameters a Playground call may carry, and the bounds each has for a model and a
// dialect (issue 37 item 3): what the proxy's schemas accept (proxy/schemas/openai.ts, messages.ts)
// narrowed by what the engine accepts (vLLM: top_p in (0, 1]) and by the model's output limit. A
// value past a bound is never sent — the field shows the bound instead — so no call is refused for
// a number the page let through. Pure, so the bounds are tested without a browser.
import type { PricedModel } from '../api.ts';
import { parseTools, type ToolChoice, toolFields } from './tools.ts';

/** Chat completions or Messages: the two text dialects a Playground call speaks. */
export type Dialect = 'chat' | 'messages';

export type JsonMode = 'text' | 'json_object' | 'json_schema';

export interface SamplingParams {
  temperature: number;
  maxTokens: number;
  /** null: not sent, the model's default. */
  topP: number | null;
  stop: string[];
  seed: number | null;
  frequencyPenalty: number | null;
  presencePenalty: number | null;
  json: JsonMode;
  /** The JSON Schema's text when `json` is json_schema. */
  schema: string;
  /** Function tools as JSON text (./tools.ts parseTools); empty: none sent. */
  tools: string;
  toolChoice: ToolChoice;
}

export interface Range {
  min: number;
  max: number;
  step: number;
}

export interface ParamLimits {
  temperature: Range;
  maxTokens: Range;
  topP: Range;
  /** How many stop sequences the dialect takes (chat `stop`: 4; Messages `stop_sequences`: 16). */
  stops: number;
  /** null: the dialect has no such parameter (the field is not shown). */
  seed: Range | null;
  penalty: Range | null;
  json: readonly JsonMode[];
  /** Whether the model calls tools (its `capabilities.tools`): the proxy refuses tools otherwise. */
  tools: boolean;
}

/** The API's own ceiling on output tokens, for a model that states no limit. */
export const API_MAX_OUTPUT_TOKENS = 1_000_000;

export const DEFAULT_PARAMS: SamplingParams = {
  temperature: 0.7,
  maxTokens: 256,
  topP: null,
  stop: [],
  seed: null,
  frequencyPenalty: null,
  presencePenalty: null,
  json: 'text',
  schema:
    '{\n  "type": "object",\n  "properties": { "answer": { "type": "string" } },\n  "required": ["answer"]\n}',
  tools: '',
  toolChoice: 'auto',
};

export function limitsFor(model: PricedModel | undefined, dialect: Dialect): ParamLimits {
  const tools = model?.capabilities?.tools ?? false;
  const maxTokens = { min: 1, max: model?.maxOutputTokens ?? API_MAX_OUTPUT_TOKENS, step: 1 };
  // vLLM refuses top_p 0 (it must be in (0, 1]), though both dialects' schemas allow it.
  const topP = { min: 0.01, max: 1, step: 0.01 };
  if (dialect === 'messages')
    return {
      temperature: { min: 0, max: 1, step: 0.1 },
      maxTokens,
      topP,
      stops: 16,
      seed: null,
      penalty: null,
      // output_config.format takes a schema only; there is no "any JSON object" mode.
      json: ['text', 'json_schema'],
      tools,
    };
  return {
    temperature: { min: 0, max: 2, step: 0.1 },
    maxTokens,
    topP,
    stops: 4,
    seed: { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER, step: 1 },
    penalty: { min: -2, max: 2, step: 0.1 },
    json: ['text', 'json_object', 'json_schema'],
    tools,
  };
}

export const clamp = (v: number, r: Range) => Math.min(r.max, Math.max(r.min, v));
const clampOrNull = (v: number | null, r: Range | null) => (v === null || r === null ? null : clamp(v, r));

/** The parameters within the limits: out-of-range numbers at their bound, what the dialect lacks dropped. */
export function withinLimits(p: SamplingParams, l: ParamLimits): SamplingParams {
  return {
    ...p,
    temperature: clamp(p.temperature, l.temperature),
    maxTokens: Math.round(clamp(p.maxTokens, l.maxTokens)),
    topP: clampOrNull(p.topP, l.topP),
    stop: p.stop.slice(0, l.stops),
    seed: clampOrNull(p.seed, l.seed),
    frequencyPenalty: clampOrNull(p.frequencyPenalty, l.penalty),
    presencePenalty: clampOrNull(p.presencePenalty, l.penalty),
    json: l.json.includes(p.json) ? p.json : 'text',
    tools: l.tools ? p.tools : '',
  };
}

/** The schema's text as an object, or the reason it is not one. */
export function parseSchema(text: string): { schema: Record<string, unknown> } | { error: string } {
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      return { error: 'The schema must be a JSON object.' };
    return { schema: v as Record<string, unknown> };
  } catch (err) {
    return { error: `The schema is not JSON: ${(err as Error).message}` };
  }
}

/** The body fields of the parameters, in the dialect's own names; unset ones are left out. */
export function paramFields(p: SamplingParams, dialect: Dialect): Record<string, unknown> {
  const f: Record<string, unknown> = {};
  const schema = p.json === 'json_schema' ? parseSchema(p.schema) : null;
  const parsed = schema && 'schema' in schema ? schema.schema : {};
  const stop = p.stop.filter((s) => s !== '');
  const parsedTools = parseTools(p.tools);
  Object.assign(f, toolFields('tools' in parsedTools ? parsedTools.tools : [], p.toolChoice, dialect));
  if (dialect === 'messages') {
    f.max_tokens = p.maxTokens;
    f.temperature = p.temperature;
    if (p.topP !== null) f.top_p = p.topP;
    if (stop.length > 0) f.stop_sequences = stop;
    if (p.json === 'json_schema') f.output_config = { format: { type: 'json_schema', schema: parsed } };
    return f;
  }
  f.temperature = p.temperature;
  f.max_tokens = p.maxTokens;
  if (p.topP !== null) f.top_p = p.topP;
  if (stop.length > 0) f.stop = stop;
  if (p.seed !== null) f.seed = p.seed;
  if (p.frequencyPenalty !== null) f.frequency_penalty = p.frequencyPenalty;
  if (p.presencePenalty !== null) f.presence_penalty = p.presencePenalty;
  if (p.json === 'json_object') f.response_format = { type: 'json_object' };
  if (p.json === 'json_schema')
    f.response_format = { type: 'json_schema', json_schema: { name: 'reply', schema: parsed } };
  return f;
}
