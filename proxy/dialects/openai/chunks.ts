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

/** What the fast path needs besides the view: the engine's name for the model, as it echoes it. */
export interface FrameView extends ChunkView {
  /** `"model":<engine's name as JSON>`: how the engine's frames name the model. */
  engineModelField: string;
  /** `"model":<canonical id as JSON>`. */
  modelField: string;
}

export function frameView(view: ChunkView, engineModel: string): FrameView {
  return {
    ...view,
    engineModelField: `"model":${JSON.stringify(engineModel)}`,
    modelField: `"model":${JSON.stringify(view.model)}`,
  };
}

export interface RelayedFrame {
  /** The client's frame JSON, or null when the client gets no frame. */
  out: string | null;
  /** The frame's usage object. */
  usage: unknown;
}

const USAGE_KEY = ',"usage":';

/**
 * The client's frame made from the engine frame's text, without parsing and re-serializing it
 * whole (the two were the largest per-frame cost of a stream). Only frames in the exact shape
 * engines send are taken: compact JSON whose first `"model":` key names the engine's model and
 * whose last key is a usage object, no error, not the usage-only frame. In JSON text a `"` inside a
 * string is always escaped, so these key patterns cannot come from generated content. Anything else
 * returns undefined and goes the parse-and-serialize way of clientChunk, which gives the same frame.
 */
export function relayFrame(data: string, v: FrameView): RelayedFrame | undefined {
  const n = data.length;
  if (n < 2 || data.charCodeAt(0) !== 123 || data.charCodeAt(n - 1) !== 125) return undefined; // {…}
  const mi = data.indexOf('"model":');
  if (mi === -1 || !data.startsWith(v.engineModelField, mi)) return undefined;
  const afterModel = data.charCodeAt(mi + v.engineModelField.length);
  if (afterModel !== 44 && afterModel !== 125) return undefined; // the value ends at , or }
  const ui = data.lastIndexOf(USAGE_KEY);
  // Exactly one usage key, after the model: the first `"usage"` is the one at `ui`.
  if (ui < mi || data.indexOf('"usage"') !== ui + 1) return undefined;
  if (data.indexOf('"error"') !== -1 || data.indexOf('"choices":[]') !== -1) return undefined;
  let usage: unknown;
  try {
    // The usage value runs to the object's closing brace only if usage is the top-level last key.
    usage = JSON.parse(data.slice(ui + USAGE_KEY.length, n - 1));
  } catch {
    return undefined;
  }
  if (typeof usage !== 'object' || usage === null || Array.isArray(usage)) return undefined;
  const renamed = v.engineModelField !== v.modelField;
  let head = data.slice(0, ui);
  if (renamed) head = `${head.slice(0, mi)}${v.modelField}${head.slice(mi + v.engineModelField.length)}`;
  if (!v.includeUsage) return { out: `${head}}`, usage };
  if (!v.continuousUsage) return { out: `${head},"usage":null}`, usage };
  return { out: renamed ? `${head}${data.slice(ui)}` : data, usage };
}
