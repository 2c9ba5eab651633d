// The ledger check's part for the key-spend hash (keys' and the account's budgets): each key's
// spend per period against the usage stream, each key's held against the holds filed under it.
// Split from ./ledger.ts.
import { ACCOUNT_SPEND_KEY } from './billing/key-spend.ts';
import { runningProblems, windowField } from './ledger-windows.ts';

/**
 * Whether the account's own spend (`*`) was counted for the whole of `period` (YYYYMM, YYYYMMDD or
 * wYYYYMMDD): from its first charge for an account that had spent nothing before (`since` '0');
 * for an install upgraded mid-period, only periods beginning after the day it began (common.lua
 * add_spent); never when nothing has counted it yet.
 */
export function accountSpendCounted(period: string, since: string | undefined): boolean {
  if (since === undefined) return false;
  if (since === '0') return true;
  const start = (s: string) => (s.startsWith('w') ? s.slice(1) : s.length === 6 ? `${s}01` : s);
  // The day it began is left out too: part of it came before.
  return start(period) > start(since);
}

export function keySpendProblems(
  raw: Record<string, string>,
  streamMonths: ReadonlyMap<string, number>,
  holds: Record<string, string>,
): string[] {
  const problems: string[] = [];
  const spent = new Map<string, number>();
  const held = new Map<string, number>();
  const holdsOfKey = new Map<string, number>();
  const running = { problems: [] as string[], slots: new Map<string, number>() };
  for (const [field, value] of Object.entries(raw)) {
    if (field === `since:${ACCOUNT_SPEND_KEY}`) continue;
    if (field.startsWith('spent:')) spent.set(field.slice(6), Number(value));
    else if (field.startsWith('held:')) held.set(field.slice(5), Number(value));
    else if (field.startsWith('h:') || field.startsWith('ah:')) {
      // `ah:` files a hold under the account's budget (its `held:*`), as `h:` under a key's.
      const holdId = field.slice(field.indexOf(':') + 1);
      const amount = holds[holdId];
      if (amount === undefined)
        problems.push(`hold ${holdId} is gone, but it is still filed under key ${value}`);
      else holdsOfKey.set(value, (holdsOfKey.get(value) ?? 0) + Number(amount));
    } else if (!windowField(field, value, holds, running))
      problems.push(`unknown key spend field '${field}'`);
  }
  problems.push(...runningProblems(raw, running));
  const since = raw[`since:${ACCOUNT_SPEND_KEY}`];
  for (const km of new Set([...spent.keys(), ...streamMonths.keys()])) {
    if (km.startsWith(`${ACCOUNT_SPEND_KEY}:`) && !accountSpendCounted(km.slice(2), since)) continue;
    const recorded = spent.get(km) ?? 0;
    const summed = streamMonths.get(km) ?? 0;
    if (recorded !== summed) {
      const sep = km.lastIndexOf(':');
      problems.push(
        `key ${km.slice(0, sep)} spent ${recorded} in ${km.slice(sep + 1)}, but its charges − refunds in the usage stream in that period are ${summed}`,
      );
    }
  }
  for (const key of new Set([...held.keys(), ...holdsOfKey.keys()])) {
    const recorded = held.get(key) ?? 0;
    const summed = holdsOfKey.get(key) ?? 0;
    if (recorded !== summed)
      problems.push(`key ${key} holds ${recorded}, but the open holds filed under it sum to ${summed}`);
  }
  return problems;
}
