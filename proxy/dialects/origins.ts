// Where a translated chat part came from in the client's own request, so a refusal made at the
// request-policy door (../calls/text-door.ts), which reads only the chat form every dialect is
// translated into, still names the client's field (`input[0].content[1].image_url`, not the
// chat form's `messages[1].content[0]`). Kept beside the part, not inside it: the part is
// serialized to the engine as it is.

export interface PartOrigin {
  /** The part in the client's request, e.g. `messages[0].content[2]`. */
  part: string;
  /** Its media URL field, e.g. `messages[0].content[2].source.url`. */
  url: string;
}

const origins = new WeakMap<object, PartOrigin>();

/** Records where `part` (an object of the chat form) came from; returns it. */
export function fromClient<T extends object>(part: T, origin: PartOrigin): T {
  origins.set(part, origin);
  return part;
}

/** Where `part` came from, or undefined for a part the client sent in chat form itself. */
export function originOf(part: object): PartOrigin | undefined {
  return origins.get(part);
}
