// The engine's whole chat completion read once as an object, for the dialects that translate it
// (Messages, Responses): the object and its usage (null when it has none).
export function readCompletionObject<C>(bytes: Buffer): { answer: C; usage: unknown } {
  const json: unknown = JSON.parse(bytes.toString('utf8'));
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new Error('engine sent a non-object');
  return { answer: json as C, usage: (json as { usage?: unknown }).usage ?? null };
}
