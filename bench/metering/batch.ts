// Redis's own time per settled request in settleBatch (the script that settles every leased
// request), by batch size, from Redis's command statistics (INFO commandstats: microseconds spent
// inside EVALSHA, inner commands included). Redis is one thread shared by every proxy replica, so
// this is the number that bounds the fleet's request rate. Starts its own redis-server.
//   npx tsx bench/metering/batch.ts [--records 4096]
import { parseArgs } from 'node:util';
import { Accounts } from '../../core/accounts/accounts.ts';
import { LeaseMetering } from '../../core/billing/leases.ts';
import { Metering } from '../../core/billing/metering.ts';
import { startRedis } from '../../test/helpers/redis.ts';

const { values } = parseArgs({ options: { records: { type: 'string', default: '4096' } } });
const RECORDS = Number(values.records);
const SIZES = [1, 8, 16, 64, 256];

async function main(): Promise<void> {
  const server = await startRedis();
  try {
    const redis = server.client();
    const account = await new Accounts(redis).create({ name: 'bench', country: 'US' });
    await new Metering(redis).topUp({ accountId: account.id, topUpId: 'seed', amount: 9e15 });
    const leases = new LeaseMetering(redis);
    let next = 0;
    const record = () => ({
      holdId: `hold_${(next++).toString(16).padStart(16, '0')}`,
      cost: 1_000,
      carved: 2_000,
      usage: {
        keyId: 'key_0123456789abcdef',
        model: 'bench/model',
        kind: 'chat' as const,
        inputTokens: 12,
        cachedTokens: 0,
        outputTokens: 16,
        requestId: 'req_0123456789abcdef01234567',
      },
    });
    const rows: string[] = [];
    for (const size of SIZES) {
      await leases.extendLease({ accountId: account.id, leaseId: 'bench', add: 1e14, den: 1, ttlMs: 60_000 });
      await redis.config('RESETSTAT');
      const batches = Math.ceil(RECORDS / size);
      for (let b = 0; b < batches; b++) {
        const records = Array.from({ length: size }, record);
        await leases.settleBatch({
          accountId: account.id,
          leaseId: 'bench',
          batchId: `batch_${size}_${b}`,
          ttlMs: 60_000,
          records,
        });
      }
      const line = (await redis.info('commandstats'))
        .split('\n')
        .find((l) => l.startsWith('cmdstat_evalsha:'));
      const m = /calls=(\d+),usec=(\d+)/.exec(line ?? '');
      if (!m) throw new Error(`no evalsha statistics: ${line}`);
      const usec = Number(m[2]);
      rows.push(
        `| ${size} | ${(usec / (batches * size)).toFixed(1)} | ${(usec / Number(m[1])).toFixed(0)} |`,
      );
    }
    const version = (await redis.info('server')).match(/redis_version:(\S+)/)?.[1] ?? '?';
    console.log(
      [
        `settleBatch: Redis time per settled request (INFO commandstats), ${RECORDS} requests per row, redis ${version}`,
        '',
        '| batch size | µs per request | µs per script call |',
        '|---:|---:|---:|',
        ...rows,
      ].join('\n'),
    );
  } finally {
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
