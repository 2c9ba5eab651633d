// What the chat-completions client sees of each engine stream chunk: the engine's own frame, cut.
// It lives with the engine's frames because what it cuts is engine knowledge (which fields are the
// engine's own, where usage and timings lie); what the client asked for comes in as the view
// (../../dialects/openai/stream.ts makes it). The proxy always asks the engine for usage
// (include_usage + continuous_usage_stats) so a stream cut short is billed for what was generated,
// but the client gets usage only as it asked: a usage frame before [DONE] with include_usage
// (CHAT-3), usage on every chunk only if it asked for continuous stats too, otherwise none.
// Every chunk echoes the canonical model id (SPEC "Catalogue rules"), and carries only the fields
// OpenAI's schema knows (./members.ts CLIENT_FIELDS), whichever engine sent it.
import { cacheN } from './cached-tokens.ts';
import { dropEngineFields, KEY, LAST_CLIENT_KEY, SPAN, topMembers } from './members.ts';

export interface ChunkView {
  model: string;
  includeUsage: boolean;
  continuousUsage: boolean;
}

/** The JSON of the frame to send for `chunk` (mutated), or null when the client gets no frame. */
export function clientChunk(chunk: Record<string, unknown>, view: ChunkView): string | null {
  dropEngineFields(chunk);
  chunk.model = view.model;
  const choices = chunk.choices;
  const usageOnly = Array.isArray(choices) && choices.length === 0 && chunk.usage != null;
  if (usageOnly) return view.includeUsage ? JSON.stringify(chunk) : null;
  if (!view.includeUsage) delete chunk.usage;
  else if (!view.continuousUsage) chunk.usage = null;
  return JSON.stringify(chunk);
}

/** What the fast path needs besides the view, as bytes. */
export interface FrameView extends ChunkView {
  /** `"model":<engine's name as JSON>`: how the engine's frames name the model. */
  engineModelField: Buffer;
  /** `"model":<canonical id as JSON>`. */
  modelField: Buffer;
  /** The same after a comma. */
  commaModelField: Buffer;
  renamed: boolean;
}

export type ModelFields = Pick<FrameView, 'engineModelField' | 'modelField' | 'commaModelField' | 'renamed'>;

/** Per (canonical id, engine name): bounded by the catalogue, built once instead of per stream. */
const modelFields = new Map<string, ModelFields>();

/** The `"model":…` bytes of the canonical id and of the engine's name for it. */
export function modelFieldsOf(model: string, engineModel: string): ModelFields {
  const key = `${model}\u0000${engineModel}`;
  let fields = modelFields.get(key);
  if (fields === undefined) {
    const engineModelField = Buffer.from(`"model":${JSON.stringify(engineModel)}`);
    const modelField = Buffer.from(`"model":${JSON.stringify(model)}`);
    const commaModelField = Buffer.concat([Buffer.from(','), modelField]);
    fields = { engineModelField, modelField, commaModelField, renamed: !engineModelField.equals(modelField) };
    modelFields.set(key, fields);
  }
  return fields;
}

export function frameView(view: ChunkView, engineModel: string): FrameView {
  const f = modelFieldsOf(view.model, engineModel);
  // Spelled out: spreading two objects into one is a slow generic copy in V8 (per stream).
  return {
    model: view.model,
    includeUsage: view.includeUsage,
    continuousUsage: view.continuousUsage,
    engineModelField: f.engineModelField,
    modelField: f.modelField,
    commaModelField: f.commaModelField,
    renamed: f.renamed,
  };
}

export interface RelayedFrame {
  /** The bytes of the client's frame (`data: …\n\n`), in pieces; null when the client gets none. */
  pieces: Buffer[] | null;
  /** Where the frame's usage object starts in its block (parsed by usageIn only when needed); -1: none. */
  usageAt: number;
  /** The usage-only frame before [DONE] (`"choices":[]`). */
  usageOnly?: boolean;
  /** A frame without usage that carried generated content (counts output if no usage ever comes). */
  content?: boolean;
  /**
   * llama.cpp's `timings.cache_n` when the frame carries timings: the prompt's cached tokens, which
   * a cut stream is billed by (./cached-tokens.ts) though the client never sees timings.
   */
  cached?: number | null;
}

const DATA = 6; // `data: `
const USAGE_NULL = Buffer.from('"usage":null');
const COMMA_USAGE_NULL = Buffer.from(',"usage":null');
const CONTENT_KEY = Buffer.from('"content":"');
const TOOL_CALLS_KEY = Buffer.from('"tool_calls":');

/**
 * The client's frame cut from the engine's own frame bytes (one `data: {…}\n\n` block), with no
 * JSON parse and serialize of the whole frame and no string made of it: those, and the garbage
 * they made, were the largest per-frame cost of a stream. Frames of compact JSON are taken in any
 * field order (./members.ts: vLLM's first frame ends with `"prompt_token_ids":null`, its last
 * carries `system_fingerprint`; llama.cpp's start with `choices` and end with `timings`), when their
 * `model` names the engine's model, they have `choices`, and usage is an object, null or absent.
 * What the client gets is the frame's own bytes less the engine's fields (CLIENT_FIELDS), with the
 * model renamed and usage as the client asked: the same frame clientChunk makes, field for field.
 * In JSON text a `"` inside a string is always escaped, so no key can come from generated
 * content. Error frames (vLLM's and OpenAI's) carry no model and take the parsing way. Anything
 * else returns undefined and goes the parse-and-serialize way of clientChunk.
 */
export function relayFrame(block: Buffer, v: FrameView): RelayedFrame | undefined {
  const n = block.length;
  const close = n - 3; // the object's closing brace, before `\n\n`
  if (n < DATA + 5 || block[n - 2] !== 10 || block[n - 1] !== 10) return undefined;
  const found = topMembers(block, DATA, close);
  if (found === undefined) return undefined;
  const [m, count] = found;
  let model = -1;
  let choices = -1;
  let usage = -1;
  let timings = -1;
  for (let i = 0; i < count * SPAN; i += SPAN) {
    const id = m[i];
    if (id === KEY.model) model = i;
    else if (id === KEY.choices) choices = i;
    else if (id === KEY.usage) usage = i;
    else if (id === KEY.timings) timings = i;
  }
  if (model === -1 || choices === -1 || block[m[choices + 2]!] !== 91) return undefined;
  const field = v.engineModelField;
  const ms = m[model + 1]!;
  if (
    m[model + 3]! - ms !== field.length ||
    block.compare(field, 0, field.length, ms, ms + field.length) !== 0
  )
    return undefined;
  let usageAt = -1;
  if (usage !== -1) {
    const uv = m[usage + 2]!;
    if (block[uv] === 123) usageAt = uv;
    else if (m[usage + 3]! - uv !== 4 || block[uv] !== 110) return undefined; // null
  }
  const cached = timings === -1 ? null : cacheN(block, m[timings + 2]!, m[timings + 3]!);
  if (block[m[choices + 2]! + 1] === 93) {
    // `"choices":[]`: the usage-only frame before [DONE], sent only when asked for
    if (usageAt === -1) return undefined;
    if (!v.includeUsage) return { pieces: null, usageAt, cached };
    return { pieces: cut(block, m, count, close, v, 'keep'), usageAt, usageOnly: true, cached };
  }
  const mode = !v.includeUsage ? 'drop' : !v.continuousUsage ? 'null' : 'keep';
  const pieces = cut(block, m, count, close, v, mode);
  if (usageAt !== -1) return { pieces, usageAt, cached };
  return { pieces, usageAt, content: contentIn(block, m[choices + 2]!, m[choices + 3]!), cached };
}

/**
 * The client's frame as pieces of the engine's block: runs of its bytes that follow on are kept as
 * one piece (a frame that needs no change is the block itself; a member's comma is the block's
 * own), the renamed model and a nulled usage are spliced in, the engine's own fields and the usage
 * the client did not ask for left out.
 */
function cut(
  block: Buffer,
  m: Int32Array,
  count: number,
  close: number,
  v: FrameView,
  usage: 'keep' | 'null' | 'drop',
): Buffer[] {
  const out: Buffer[] = [];
  let runStart = 0;
  let runEnd = DATA + 1; // `data: {`, not yet pushed
  let first = true;
  let sawUsage = false;
  for (let i = 0; i <= count * SPAN; i += SPAN) {
    // the members, then `}\n\n` (i at the end) as one more run of bytes, without a comma
    const end = i === count * SPAN;
    const id = end ? KEY.OTHER : m[i]!;
    let literal: Buffer | null = null;
    if (id === KEY.usage) {
      sawUsage = true;
      if (usage === 'drop') continue;
      if (usage === 'null') literal = first ? USAGE_NULL : COMMA_USAGE_NULL;
    } else if (id === KEY.model && v.renamed) literal = first ? v.modelField : v.commaModelField;
    else if (!end && (id === KEY.OTHER || id > LAST_CLIENT_KEY)) continue;
    if (end && !sawUsage && usage === 'null') {
      // no usage from the engine: the client that asked for usage gets `"usage":null` (clientChunk)
      if (runEnd !== -1) out.push(block.subarray(runStart, runEnd));
      out.push(first ? USAGE_NULL : COMMA_USAGE_NULL);
      runEnd = -1;
    }
    if (literal !== null) {
      if (runEnd !== -1) out.push(block.subarray(runStart, runEnd));
      out.push(literal);
      runEnd = -1;
    } else {
      // the member's bytes with the comma before it (the block's own), or the closing `}\n\n`
      const from = end ? close : first ? m[i + 1]! : m[i + 1]! - 1;
      const to = end ? close + 3 : m[i + 3]!;
      if (runEnd === from) runEnd = to;
      else {
        if (runEnd !== -1) out.push(block.subarray(runStart, runEnd));
        runStart = from;
        runEnd = to;
      }
    }
    first = false;
  }
  out.push(block.subarray(runStart, runEnd));
  return out;
}

/** hasContent on the bytes of a frame's choices: a non-empty content string or tool calls. */
function contentIn(block: Buffer, from: number, to: number): boolean {
  for (let i = block.indexOf(CONTENT_KEY, from); i !== -1 && i < to; i = block.indexOf(CONTENT_KEY, i + 1))
    if (block[i + CONTENT_KEY.length] !== 34) return true;
  for (
    let i = block.indexOf(TOOL_CALLS_KEY, from);
    i !== -1 && i < to;
    i = block.indexOf(TOOL_CALLS_KEY, i + 1)
  )
    if (block[i + TOOL_CALLS_KEY.length] !== 110) return true; // not null
  return false;
}
