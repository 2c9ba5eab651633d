// What a key's limits (issue 34) cost on the metered path: reserve+settle pairs (the two Lua
// scripts of every call of a limited key) for a key with no limits — the baseline — against the
// same pairs for a key with a budget (a daily spend limit), with all four rate limits, and with
// both, in one run on one Redis. The limits are set so high that nothing is refused: the cost of
// checking and taking the windows is what is measured, not refusals. Variants take turns for
// `rounds` rounds, so a load change on the shared machine hits all of them; each figure is the
// median over rounds, and the ratio is against the no-limits baseline of the same run. Two
// measures: pairs per second from one client (round trips included), and Redis's own time per pair
// (INFO commandstats: the scripts' time inside Redis, which one thread shares with every proxy).
// Starts its own redis-server and stops it.
//   npx tsx bench/metering/limits.ts [--concurrency 32] [--seconds 1] [--rounds 5]
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Metering } from '../../core/billing/metering.ts';
import { textCost, textHold } from '../../core/billing/pricing.ts';
import { MAX_RATE_LIMIT } from '../../core/billing/rate-limits.ts';
import { ApiKeys } from '../../core/keys/index.ts';
import { checkAccountLedger } from '../../core/ledger/ledger.ts';
import type { Redis } from '../../core/redis/client.ts';
import { startRedis } from '../../test/helpers/redis.ts';
import { measure } from './pairs.ts';

const { values } = parseArgs({
  options: {
    concurrency: { type: 'string', default: '32' },
    seconds: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '5' },
  },
});
const concurrency = Number(values.concurrency);
const durationMs = Number(values.seconds) * 1000;
const rounds = Number(values.rounds);
const price = { input: '0.15', cachedInput: '0.075', output: '0.60' };
const hold = textHold(price, { promptTokens: 2_000, maxOutputTokens: 512 });
const cost = textCost(price, { inputTokens: 500, cachedTokens: 200, outputTokens: 300 });
const ALL_RATES = {
  requestsPerMinute: MAX_RATE_LIMIT,
  inputTokensPerMinute: MAX_RATE_LIMIT,
  outputTokensPerMinute: MAX_RATE_LIMIT,
  concurrentCalls: MAX_RATE_LIMIT,
};

type Variant = 'none' | 'budget' | 'rates' | 'both';
const VARIANTS: { name: Variant; label: string }[] = [
  { name: 'none', label: 'no limits (baseline)' },
  { name: 'budget', label: 'daily budget' },
  { name: 'rates', label: 'four rate limits' },
  { name: 'both', label: 'budget + rate limits' },
];

/** Redis's own µs in scripts since the last reset (evalsha and eval, inner commands included). */
async function scriptMicros(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let us = 0;
  for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=\d+,usec=(\d+)/g)) us += Number(m[1]);
  return us;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const server = await startRedis();
  try {
    const redis: Redis = server.client();
    const metering = new Metering(redis);
    const keys = new ApiKeys(redis, { brand: 'bench', kek: randomBytes(32) });
    // One account per variant, each with one key, limited as the variant says.
    const setup = new Map<Variant, { accountId: string; keyId: string }>();
    for (const { name } of VARIANTS) {
      const accountId = `bench_${name}`;
      await metering.topUp({ accountId, topUpId: 'seed', amount: 1e15 });
      const budget = name === 'budget' || name === 'both';
      const { key } = await keys.create(accountId, {
        name,
        ...(budget ? { spendLimit: 1e15, spendWindow: 'day' as const } : {}),
      });
      if (name === 'rates' || name === 'both') await keys.setRateLimits(accountId, key.id, ALL_RATES);
      setup.set(name, { accountId, keyId: key.id });
    }
    const run = Math.random().toString(36).slice(2, 8);
    let turn = 0;
    const pairsOf = (v: Variant, ms: number) => {
      const { accountId, keyId } = setup.get(v)!;
      const t = ++turn; // hold ids are one call's each, never reused across turns
      return measure(
        concurrency,
        async (worker, i) => {
          const holdId = `b${run}-${t}-${worker}-${i}`;
          const r = await metering.reserve({
            accountId,
            holdId,
            ...hold,
            ttlMs: 60_000,
            keyId,
            tokens: { input: 2_000, output: 512 },
          });
          if (!r.ok) throw new Error(`bench key of ${v} was refused: the limits must not bind here`);
          await metering.settle({
            accountId,
            holdId,
            cost,
            usage: { keyId, model: 'bench/model', kind: 'chat', inputTokens: 500, outputTokens: 300 },
          });
        },
        ms,
      );
    };
    for (const { name } of VARIANTS) await pairsOf(name, 300); // warm-up: JIT, script cache
    const rate = new Map<Variant, number[]>(VARIANTS.map((v) => [v.name, []]));
    const micros = new Map<Variant, number[]>(VARIANTS.map((v) => [v.name, []]));
    for (let round = 0; round < rounds; round++) {
      for (const { name } of round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
        await redis.config('RESETSTAT');
        const r = await pairsOf(name, durationMs);
        rate.get(name)!.push(r.perSecond);
        micros.get(name)!.push((await scriptMicros(redis)) / r.ops);
      }
    }
    for (const { accountId } of setup.values()) {
      const l = await checkAccountLedger(redis, accountId, { toleranceMs: 0 });
      if (l.problems.length > 0) throw new Error(`${accountId}: ${l.problems.join('; ')}`);
      if (l.held !== 0) throw new Error(`${accountId} kept ${l.held} held after the bench`);
    }
    const base = { rate: median(rate.get('none')!), us: median(micros.get('none')!) };
    const version = (await redis.info('server')).match(/redis_version:(\S+)/)?.[1] ?? '?';
    const lines = VARIANTS.map(({ name, label }) => {
      const r = median(rate.get(name)!);
      const us = median(micros.get(name)!);
      return `| ${label} | ${Math.round(r).toLocaleString('en-US')} | ${((r / base.rate) * 100).toFixed(1)} % | ${us.toFixed(1)} | ${((us / base.us) * 100).toFixed(1)} % |`;
    });
    console.log(
      [
        `Limits on the metered path: reserve+settle pairs of one key, one ioredis connection, concurrency ${concurrency}, ${durationMs / 1000} s per turn, ${rounds} rounds (medians), redis ${version}, node ${process.version}`,
        '',
        '| key | pairs per second | vs no limits | Redis µs per pair | vs no limits |',
        '|---|---:|---:|---:|---:|',
        ...lines,
      ].join('\n'),
    );
  } finally {
    await server.stop();
  }
}

await main();
