// What the client sees of each engine stream chunk. The proxy always asks the engine for usage
// (include_usage + continuous_usage_stats) so a stream cut short is billed for what was generated,
// but the client gets usage only as it asked: a usage frame before [DONE] with include_usage
// (CHAT-3), usage on every chunk only if it asked for continuous stats too, otherwise none.
// Every chunk echoes the canonical model id (SPEC "Catalogue rules").

export interface ChunkView {
  model: string;
  includeUsage: boolean;
  continuousUsage: boolean;
}

/** The JSON of the frame to send for `chunk` (mutated), or null when the client gets no frame. */
export function clientChunk(chunk: Record<string, unknown>, view: ChunkView): string | null {
  chunk.model = view.model;
  const choices = chunk.choices;
  const usageOnly = Array.isArray(choices) && choices.length === 0 && chunk.usage != null;
  if (usageOnly) return view.includeUsage ? JSON.stringify(chunk) : null;
  if (!view.includeUsage) delete chunk.usage;
  else if (!view.continuousUsage) chunk.usage = null;
  return JSON.stringify(chunk);
}

/** True for a chunk that carries generated content (counts output when an engine reports no usage). */
export function hasContent(chunk: Record<string, unknown>): boolean {
  const choices = chunk.choices;
  if (!Array.isArray(choices)) return false;
  return choices.some((c) => {
    const d = (c as { delta?: { content?: unknown; tool_calls?: unknown } } | null)?.delta;
    return (typeof d?.content === 'string' && d.content.length > 0) || d?.tool_calls != null;
  });
}

/** What the fast path needs besides the view, as bytes. */
export interface FrameView extends ChunkView {
  /** `"model":<engine's name as JSON>`: how the engine's frames name the model. */
  engineModelField: Buffer;
  /** `"model":<canonical id as JSON>`. */
  modelField: Buffer;
  renamed: boolean;
}

export type ModelFields = Pick<FrameView, 'engineModelField' | 'modelField' | 'renamed'>;

/** Per (canonical id, engine name): bounded by the catalogue, built once instead of per stream. */
const modelFields = new Map<string, ModelFields>();

/** The `"model":…` bytes of the canonical id and of the engine's name for it. */
export function modelFieldsOf(model: string, engineModel: string): ModelFields {
  const key = `${model}\u0000${engineModel}`;
  let fields = modelFields.get(key);
  if (fields === undefined) {
    const engineModelField = Buffer.from(`"model":${JSON.stringify(engineModel)}`);
    const modelField = Buffer.from(`"model":${JSON.stringify(model)}`);
    fields = { engineModelField, modelField, renamed: !engineModelField.equals(modelField) };
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
    renamed: f.renamed,
  };
}

export interface RelayedFrame {
  /** The bytes of the client's frame (`data: …\n\n`), in pieces; null when the client gets none. */
  pieces: Buffer[] | null;
  /** Where the frame's usage object starts in its block: parsed by usageIn only when it is needed. */
  usageAt: number;
  /** The usage-only frame before [DONE] (`"choices":[]`). */
  usageOnly?: boolean;
}

const DATA = 6; // `data: `
const MODEL_KEY = Buffer.from('"model":');
const CHOICES_KEY = Buffer.from('"choices":[');
const USAGE_KEY = Buffer.from(',"usage":');
const END = Buffer.from('}\n\n');
const NULL_USAGE_END = Buffer.from(',"usage":null}\n\n');

/**
 * The client's frame cut from the engine's own frame bytes (one `data: {…}\n\n` block), with no
 * JSON parse and serialize of the whole frame and no string made of it: those, and the garbage
 * they made, were the largest per-frame cost of a stream. Only frames in the exact shape engines
 * send are taken: compact JSON whose first `"model":` key names the engine's model, that has a
 * `choices` key and whose last key is a usage object (the usage-only frame, `"choices":[]`,
 * included). In JSON text a `"` inside a string is always escaped, so these key patterns cannot come
 * from generated content; and the text after the last `,"usage":` scans as one object only when
 * that key is the object's own last key (usageKeyAt). Error frames (vLLM's and
 * OpenAI's) carry neither a model nor usage. Anything else returns undefined and goes the
 * parse-and-serialize way of clientChunk, which gives the same frame. The scans run from the
 * frame's two ends, never across the generated content.
 */
export function relayFrame(block: Buffer, v: FrameView): RelayedFrame | undefined {
  const n = block.length;
  const close = n - 3; // the object's closing brace, before `\n\n`
  if (n < DATA + 5 || block[DATA] !== 123 || block[close] !== 125) return undefined; // {…}
  const mi = engineModelKey(block, DATA, v.engineModelField);
  if (mi === -1) return undefined;
  const afterModel = mi + v.engineModelField.length;
  const ci = block.indexOf(CHOICES_KEY, afterModel);
  if (ci === -1) return undefined;
  const ui = usageKeyAt(block, ci, close);
  if (ui === -1) return undefined;
  const usageAt = ui + USAGE_KEY.length;
  if (block[ci + CHOICES_KEY.length] === 93) {
    // `"choices":[]`: the usage-only frame before [DONE], sent whole, and only when asked for
    if (!v.includeUsage) return { pieces: null, usageAt };
    const pieces = v.renamed ? [block.subarray(0, mi), v.modelField, block.subarray(afterModel)] : [block];
    return { pieces, usageAt, usageOnly: true };
  }
  if (v.includeUsage && v.continuousUsage && !v.renamed) return { pieces: [block], usageAt };
  const head = v.renamed
    ? [block.subarray(0, mi), v.modelField, block.subarray(afterModel, ui)]
    : [block.subarray(0, ui)];
  if (!v.includeUsage) head.push(END);
  else if (!v.continuousUsage) head.push(NULL_USAGE_END);
  else head.push(block.subarray(ui));
  return { pieces: head, usageAt };
}

/**
 * The usage object of a frame relayFrame took (the engine's running count with continuous usage
 * stats): parsed once, for the stream's last such frame, not for every frame. `close` is where
 * the frame's object closes (a block ends `}\n\n`). Undefined when the bytes that passed
 * usageKeyAt's scan are not JSON after all.
 */
export function usageIn(block: Buffer, usageAt: number, close = block.length - 3): object | undefined {
  try {
    const usage: unknown = JSON.parse(block.toString('utf8', usageAt, close));
    return typeof usage === 'object' && usage !== null && !Array.isArray(usage) ? usage : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Where the first `"model":` key is, when it names the engine's model (`field`, its whole value:
 * the next byte ends it); -1 otherwise.
 */
export function engineModelKey(buf: Buffer, from: number, field: Buffer): number {
  const mi = buf.indexOf(MODEL_KEY, from);
  if (mi === -1 || buf.compare(field, 0, field.length, mi, mi + field.length) !== 0) return -1;
  const after = buf[mi + field.length];
  return after === 44 || after === 125 ? mi : -1; // the value ends at , or }
}

/**
 * Where the top object's last key `,"usage":` starts when it holds an object; -1 otherwise. The
 * value's bytes are scanned, not parsed: an object whose braces balance exactly at `close` and
 * that holds no array, with strings skipped. A `,"usage":` nested deeper leaves its containers'
 * closing brackets in the way, so only the top object's own last key passes.
 */
export function usageKeyAt(buf: Buffer, notBefore: number, close: number): number {
  const at = buf.lastIndexOf(USAGE_KEY, close);
  if (at < notBefore) return -1;
  const from = at + USAGE_KEY.length;
  if (buf[from] !== 123 || buf[close - 1] !== 125) return -1; // {…}
  let depth = 0;
  for (let i = from; i < close; i++) {
    const c = buf[i];
    if (c === 34) {
      // a string: to its closing quote, stepping over escapes
      for (i++; i < close && buf[i] !== 34; i++) if (buf[i] === 92) i++;
    } else if (c === 123) depth++;
    else if (c === 125) {
      if (--depth === 0 && i !== close - 1) return -1;
    } else if (c === 91 || c === 93) return -1;
  }
  return depth === 0 ? at : -1;
}

/** The top object's last key when it is `usage` holding an object (at: where `,"usage":` starts). */
export function lastUsage(
  buf: Buffer,
  notBefore: number,
  close: number,
): { at: number; usage: object } | undefined {
  const at = usageKeyAt(buf, notBefore, close);
  if (at === -1) return undefined;
  const usage = usageIn(buf, at + USAGE_KEY.length, close);
  return usage === undefined ? undefined : { at, usage };
}
