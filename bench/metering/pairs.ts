// Reserve+settle pairs (one settled call each: two Lua scripts) run by `concurrency` loops for a
// while, with their latencies: what the metering benches measure (run.ts, cluster.ts).
import type { Metering } from '../../core/billing/metering.ts';
import { textCost, textHold } from '../../core/billing/pricing.ts';

const price = { input: '0.15', cachedInput: '0.075', output: '0.60' };

export interface Result {
  ops: number;
  perSecond: number;
  p50: number;
  p99: number;
}

/** Runs `concurrency` loops of `op` for the duration; latencies in ms per op. */
export async function measure(
  concurrency: number,
  op: (worker: number, i: number) => Promise<unknown>,
  ms: number,
): Promise<Result> {
  const latencies: number[] = [];
  const start = performance.now();
  const deadline = start + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      for (let i = 0; performance.now() < deadline; i += 1) {
        const t = performance.now();
        await op(worker, i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { ops: latencies.length, perSecond: latencies.length / elapsed, p50: at(0.5), p99: at(0.99) };
}

export async function pairs(
  concurrency: number,
  metering: Metering,
  accountFor: (worker: number) => string,
  ms: number,
): Promise<Result> {
  const hold = textHold(price, { promptTokens: 2_000, maxOutputTokens: 512 });
  const cost = textCost(price, { inputTokens: 500, cachedTokens: 200, outputTokens: 300 });
  const run = Math.random().toString(36).slice(2, 8);
  return measure(
    concurrency,
    async (worker, i) => {
      const accountId = accountFor(worker);
      const holdId = `b${run}-${worker}-${i}`;
      const r = await metering.reserve({ accountId, holdId, ...hold, ttlMs: 60_000 });
      if (!r.ok) throw new Error(`bench account ${accountId} ran dry`);
      await metering.settle({
        accountId,
        holdId,
        cost,
        usage: {
          keyId: 'key_bench',
          model: 'bench/model',
          kind: 'chat',
          inputTokens: 500,
          cachedTokens: 200,
          outputTokens: 300,
        },
      });
    },
    ms,
  );
}
