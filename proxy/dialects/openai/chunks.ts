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
