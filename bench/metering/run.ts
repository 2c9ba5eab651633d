// Metering throughput against raw Redis, in one run on one machine: PING sets the ceiling of
// what a round trip costs here, and a reserve+settle pair (two Lua scripts) is compared with it.
// Starts its own redis-server and stops it; takes a few seconds.
//   npx tsx bench/metering/run.ts [--concurrency 64] [--seconds 1.5]
import { parseArgs } from 'node:util';
import { Metering } from '../../core/billing/metering.ts';
import { textCost, textHold } from '../../core/billing/pricing.ts';
import type { Redis } from '../../core/redis-client.ts';
import { startRedis } from '../../test/helpers/redis.ts';

const { values } = parseArgs({
  options: { concurrency: { type: 'string', default: '64' }, seconds: { type: 'string', default: '1.5' } },
});
const concurrency = Number(values.concurrency);
const durationMs = Number(values.seconds) * 1000;
const price = { input: '0.15', cachedInput: '0.075', output: '0.60' };

interface Result {
  ops: number;
  perSecond: number;
  p50: number;
  p99: number;
}

/** Runs `concurrency` loops of `op` for the duration; latencies in ms per op. */
async function measure(
  op: (worker: number, i: number) => Promise<unknown>,
  ms: number = durationMs,
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

async function pairs(
  metering: Metering,
  accountFor: (worker: number) => string,
  ms: number = durationMs,
): Promise<Result> {
  const hold = textHold(price, { promptTokens: 2_000, maxOutputTokens: 512 });
  const cost = textCost(price, { inputTokens: 500, cachedTokens: 200, outputTokens: 300 });
  const run = Math.random().toString(36).slice(2, 8);
  return measure(async (worker, i) => {
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
  }, ms);
}

async function main(): Promise<void> {
  const server = await startRedis();
  try {
    const redis: Redis = server.client();
    const metering = new Metering(redis);
    const accounts = Array.from({ length: concurrency }, (_, i) => `bench${i}`);
    for (const accountId of [...accounts, 'hot']) {
      await metering.topUp({ accountId, topUpId: 'seed', amount: 1e15 });
    }
    // Warm-up: connection, JIT, script cache.
    await measure(() => redis.ping(), 300);
    await pairs(metering, (w) => accounts[w]!, 300);

    const ping = await measure(() => redis.ping());
    const spread = await pairs(metering, (w) => accounts[w]!);
    const hot = await pairs(metering, () => 'hot');
    for (const accountId of [...accounts, 'hot']) {
      const b = await metering.balance(accountId);
      if (b.held !== 0) throw new Error(`${accountId} kept ${b.held} held after the bench`);
    }

    const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
    const ms = (n: number) => n.toFixed(2);
    const row = (name: string, r: Result, ratio: string) =>
      `| ${name} | ${fmt(r.perSecond)} | ${ms(r.p50)} | ${ms(r.p99)} | ${ratio} |`;
    const ratio = (r: Result) => `${((r.perSecond / ping.perSecond) * 100).toFixed(1)} %`;
    const version = (await redis.info('server')).match(/redis_version:(\S+)/)?.[1] ?? '?';
    console.log(
      [
        `Metering bench: one ioredis connection, concurrency ${concurrency}, ${durationMs / 1000} s per row, redis ${version}, node ${process.version}`,
        '',
        '| operation | per second | p50 ms | p99 ms | vs PING |',
        '|---|---:|---:|---:|---:|',
        row('PING (one round trip)', ping, '100 %'),
        row(`reserve+settle pair, ${concurrency} accounts`, spread, ratio(spread)),
        row('reserve+settle pair, one hot account', hot, ratio(hot)),
        '',
        'A pair is two round trips (two Lua scripts), so 50 % of the PING rate is the round-trip ceiling.',
      ].join('\n'),
    );
  } finally {
    await server.stop();
  }
}

await main();
