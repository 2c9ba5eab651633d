// Constant pieces of Responses stream events (./stream.ts), built once rather than per event.

/**
 * The end of a text delta event after its JSON string, by sequence number: built once per number
 * for the first thousands (every stream's deltas are numbered from the same few), not per delta.
 */
const TAILS: Buffer[] = [];
const TAILS_KEPT = 8192;
export function deltaTail(seq: number): Buffer {
  const kept = TAILS[seq];
  if (kept !== undefined) return kept;
  const tail = Buffer.from(`,"logprobs":[],"sequence_number":${seq}}\n\n`);
  if (seq < TAILS_KEPT) TAILS[seq] = tail;
  return tail;
}

/** The empty text part a message opens with; the empty parts a reasoning item opens with. */
export const EMPTY_TEXT_PART = '{"type":"output_text","text":"","annotations":[],"logprobs":[]}';
export const EMPTY_REASONING_PART = '{"type":"reasoning_text","text":""}';
export const EMPTY_SUMMARY_PART = '{"type":"summary_text","text":""}';
