// When the simulated model calls tools, and with which arguments.
//   tool_choice {function: {name}} → that tool.
//   tool_choice "required"         → the tools named in the last user message, else the first tool.
//   tool_choice "auto" (default)   → the tools named in the last message, if it is a user message
//                                    that mentions a tool's name; otherwise a text answer (so an
//                                    agent loop ends once tool results come back).
//   parallel_tool_calls false      → at most one call.
// Arguments are JSON generated from the tool's JSON Schema, deterministically from the prompt;
// when the last user message spells top-level string arguments as `name="value"`, the call has
// those and the required ones only, so a test can drive a real agent through a real edit
// (test/editors/: file_path, old_string, new_string).

import { hash53, seededRandom } from '../hash.ts';
import type { ChatRequest, ToolDefinition } from './request.ts';

export interface PlannedToolCall {
  id: string;
  name: string;
  arguments: string;
}

const SAMPLE_WORDS = ['alpha', 'bravo', 'paris', 'tokyo', 'lima', 'oslo', 'delta', 'echo'];

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function mentioned(tools: ToolDefinition[], text: string): ToolDefinition[] {
  return tools.filter((t) => new RegExp(`(^|[^\\w])${escapeRegExp(t.name)}($|[^\\w])`, 'i').test(text));
}

export function chooseTools(req: ChatRequest): ToolDefinition[] {
  const choice = req.toolChoice;
  if (choice === 'none' || req.tools.length === 0) return [];
  let chosen: ToolDefinition[];
  if (typeof choice === 'object') {
    chosen = req.tools.filter((t) => t.name === choice.name);
  } else {
    // A system turn after the user's (Claude Code sends its environment there) is context, not a
    // reply: the turn to answer is the last one that is not system.
    const last = [...req.messages].reverse().find((m) => m.role !== 'system') ?? req.messages.at(-1)!;
    const lastUser = [...req.messages].reverse().find((m) => m.role === 'user');
    if (choice === 'required') {
      const named = lastUser ? mentioned(req.tools, lastUser.text) : [];
      chosen = named.length > 0 ? named : [req.tools[0]!];
    } else {
      chosen = last.role === 'user' ? mentioned(req.tools, last.text) : [];
    }
  }
  return req.parallelToolCalls ? chosen : chosen.slice(0, 1);
}

/** `name="value"` pairs of a message (no escapes inside the quotes). */
function spelledArguments(text: string): Map<string, string> {
  return new Map([...text.matchAll(/\b(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
}

/**
 * The spelled string arguments of the tool's schema, with only its required ones sampled — as a
 * model leaves out the optional arguments it has no use for (a sampled offset would break a read).
 */
function withSpelled(schema: unknown, sampled: unknown, spelled: Map<string, string>): unknown {
  if (!isObject(sampled) || !isObject(schema) || !isObject(schema.properties)) return sampled;
  const props = schema.properties;
  const given = [...spelled].filter(([k]) => isObject(props[k]) && props[k].type === 'string');
  if (given.length === 0) return sampled;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  return {
    ...Object.fromEntries(Object.entries(sampled).filter(([k]) => required.has(k))),
    ...Object.fromEntries(given),
  };
}

export function planToolCalls(req: ChatRequest, promptKey: string, choiceIndex: number): PlannedToolCall[] {
  const lastUser = [...req.messages].reverse().find((m) => m.role === 'user');
  const spelled = spelledArguments(lastUser?.text ?? '');
  return chooseTools(req).map((tool, i) => {
    const seed = hash53(`${promptKey}\u0000${tool.name}`, choiceIndex * 31 + i);
    const args = withSpelled(
      tool.parameters,
      sampleFromSchema(tool.parameters, seededRandom(seed), 0),
      spelled,
    );
    return {
      id: `call_${seed.toString(16).padStart(14, '0')}${i}`,
      name: tool.name,
      arguments: JSON.stringify(args ?? {}),
    };
  });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A value that satisfies the common subset of JSON Schema tool parameters use. */
export function sampleFromSchema(schema: unknown, random: () => number, depth: number): unknown {
  if (!isObject(schema) || depth > 6) return null;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    return schema.enum[Math.floor(random() * schema.enum.length)];
  }
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options) && options.length > 0) {
      const nonNull = options.find((o) => !(isObject(o) && o.type === 'null')) ?? options[0];
      return sampleFromSchema(nonNull, random, depth + 1);
    }
  }
  let type = schema.type;
  if (Array.isArray(type)) type = type.find((t) => t !== 'null') ?? 'null';
  if (type === undefined && isObject(schema.properties)) type = 'object';
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      const props = isObject(schema.properties) ? schema.properties : {};
      for (const [key, sub] of Object.entries(props)) out[key] = sampleFromSchema(sub, random, depth + 1);
      return out;
    }
    case 'array':
      return [sampleFromSchema(schema.items, random, depth + 1)];
    case 'integer': {
      const min = typeof schema.minimum === 'number' ? Math.ceil(schema.minimum) : 0;
      const max = typeof schema.maximum === 'number' ? Math.floor(schema.maximum) : min + 100;
      return min + Math.floor(random() * (max - min + 1));
    }
    case 'number': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : 0;
      const max = typeof schema.maximum === 'number' ? schema.maximum : min + 100;
      return Math.round((min + random() * (max - min)) * 100) / 100;
    }
    case 'boolean':
      return random() < 0.5;
    case 'null':
      return null;
    default:
      return SAMPLE_WORDS[Math.floor(random() * SAMPLE_WORDS.length)];
  }
}
