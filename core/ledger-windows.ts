// The ledger check's look at the keys' rate windows (issue 34), apart from core/ledger.ts for size.

/**
 * The keys' rate windows (core/billing/lua/windows.lua) in the same hash: buckets (`wr:`, `wi:`,
 * `wo:`) are judged by nothing but their shape; a hold's share (`wh:`) must name an open hold, and
 * its running slot is counted toward its key. False for a field that is none of them.
 */
export function windowField(
  field: string,
  value: string,
  holds: Record<string, string>,
  running: { problems: string[]; slots: Map<string, number> },
): boolean {
  const kind = field.slice(0, 3);
  if (kind === 'wr:' || kind === 'wi:' || kind === 'wo:') return /^-?\d+:\d+:\d+$/.test(value);
  if (kind === 'wc:') return true;
  if (kind !== 'wh:') return false;
  const m = /^(.+):\d+:\d+:\d+:([01]):\d+:\d+$/.exec(value);
  if (m === null) return false;
  if (holds[field.slice(3)] === undefined)
    running.problems.push(
      `hold ${field.slice(3)} is gone, but its share of key ${m[1]}'s rate windows is still taken`,
    );
  if (m[2] === '1') running.slots.set(m[1]!, (running.slots.get(m[1]!) ?? 0) + 1);
  return true;
}

/** Each key's running calls (`wc:`) are its holds' slots (`wh:`), nothing taken forever. */
export function runningProblems(
  raw: Record<string, string>,
  running: { problems: string[]; slots: Map<string, number> },
): string[] {
  const out = [...running.problems];
  const counted = new Map<string, number>();
  for (const [field, value] of Object.entries(raw))
    if (field.startsWith('wc:')) counted.set(field.slice(3), Number(value));
  for (const key of new Set([...counted.keys(), ...running.slots.keys()])) {
    const c = counted.get(key) ?? 0;
    const s = running.slots.get(key) ?? 0;
    if (c !== s) out.push(`key ${key} counts ${c} calls running, but ${s} open holds took a slot`);
  }
  return out;
}
