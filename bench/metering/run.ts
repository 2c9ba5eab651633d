// Metering throughput against raw Redis, in one run on one machine: PING sets the ceiling of
// what a round trip costs here, and a reserve+settle pair (two Lua scripts) is compared with it.
// Starts its own redis-server and stops it; takes a few seconds.
//   npx tsx bench/metering/run.ts [--concurrency 64] [--seconds 1.5]
import { parseArgs } from 'node:util';
import { Metering } from '../../core/billing/metering.ts';
import type { Redis } from '../../core/redis/client.ts';
import { startRedis } from '../../test/helpers/redis.ts';
import { measure as measureFor, pairs as pairsFor, type Result } from './pairs.ts';

const { values } = parseArgs({
  options: { concurrency: { type: 'string', default: '64' }, seconds: { type: 'string', default: '1.5' } },
});
const concurrency = Number(values.concurrency);
const durationMs = Number(values.seconds) * 1000;
const measure = (op: (worker: number, i: number) => Promise<unknown>, ms = durationMs) =>
  measureFor(concurrency, op, ms);
const pairs = (metering: Metering, accountFor: (worker: number) => string, ms = durationMs) =>
  pairsFor(concurrency, metering, accountFor, ms);

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
