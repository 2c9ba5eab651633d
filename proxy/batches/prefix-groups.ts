// The order a batch's lines are dispatched in (docs/batches.md "How a batch runs"): lines sharing a
// prompt prefix — the same system prompt, instructions and leading messages, all but the last
// message — run one after another, so an engine's prefix cache (and the proxy's prefix routing)
// still holds the shared part when the next one arrives instead of having evicted it between
// lines far apart in the file. Grouped within windows of the input (PREFIX_WINDOW lines), so the
// batch still progresses roughly in input order; within a group, and between groups (by their first
// line), input order is kept.
import { createHash } from 'node:crypto';

export const PREFIX_WINDOW = 1_024;

/** Pure: a hash of the line's leading prompt ('' when it has none to share: one message, or embeddings). */
export function prefixKey(body: Record<string, unknown>): string {
  const leading: unknown[] = [];
  if (body.system !== undefined) leading.push(body.system);
  if (body.instructions !== undefined) leading.push(body.instructions);
  const turns = Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : [];
  leading.push(...turns.slice(0, -1));
  if (leading.length === 0) return '';
  return createHash('sha256')
    .update(JSON.stringify([body.model ?? null, leading]))
    .digest('base64url');
}

/** Pure: `pending` (line indices, in order) with each window's lines grouped by their prefix. */
export function groupByPrefix(
  lines: readonly { body: Record<string, unknown> }[],
  pending: readonly number[],
  window = PREFIX_WINDOW,
): number[] {
  const out: number[] = [];
  for (let start = 0; start < pending.length; start += window) {
    const groups = new Map<string, number[]>();
    for (const index of pending.slice(start, start + window)) {
      const key = prefixKey(lines[index]?.body ?? {});
      const group = groups.get(key);
      if (group === undefined) groups.set(key, [index]);
      else group.push(index);
    }
    for (const group of groups.values()) out.push(...group);
  }
  return out;
}
