// One call's spend as the budget tests make it: a hold of up to `cost` under the key, settled at
// `cost` when it was granted. Returns the reserve's answer (a refusal says which budget and when it
// resets). core/billing's budget tests (account and key windows) share it.
import type { Metering } from '../../core/billing/metering.ts';
import type { UsageRecord } from '../../core/billing/script-args.ts';

export async function spendOnce(
  m: Metering,
  call: { accountId: string; keyId: string; holdId: string; cost: number; ttlMs: number },
  usage: UsageRecord,
) {
  const { accountId, keyId, holdId, cost, ttlMs } = call;
  const res = await m.reserve({ accountId, holdId, min: 1, max: cost, ttlMs, keyId });
  if (res.ok) await m.settle({ accountId, holdId, cost, usage });
  return res;
}
