// The archiver's rate (issue 23): usage records per second moved from Redis streams into the
// journal, from a synthetic backlog (no proxy; against a real proxy in the same run:
// ./proxy-vs-archiver.ts). Real Redis, real PostgreSQL with its durable defaults (fsync on,
// synchronous commit), on this machine.
//
// Two phases: (1) a backlog — N records written to 64 accounts' streams (Metering.charge, the
// one-script charge), then drained by Archiver.pass() alone: the archiver's ceiling; (2) under load —
// the same writes again while the archiver runs beside them on the same machine, as in production:
// what the writers reached, what the archiver reached, and the longest stream seen.
//
//   npx tsx bench/journal/archiver.ts [--records 100000] [--accounts 64] [--accounts-per-round 16]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startPostgres } from '../../cli/postgres-server.ts';
import { Accounts } from '../../core/accounts/accounts.ts';
import { Metering } from '../../core/billing/index.ts';
import { freePort } from '../../core/free-port.ts';
import { newId } from '../../core/ids.ts';
import { Archiver, Journal } from '../../core/journal/index.ts';
import { accountKeys } from '../../core/redis/keyspace.ts';
import { startRedis } from '../../test/helpers/redis.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '100000' },
    accounts: { type: 'string', default: '64' },
    'accounts-per-round': { type: 'string', default: '16' },
  },
});
const RECORDS = Number(values.records);
const ACCOUNTS = Number(values.accounts);
const WRITERS = 64;

const redisServer = await startRedis();
const dir = mkdtempSync(join(tmpdir(), 'mp-bench-pg-'));
const { chmodSync } = await import('node:fs');
chmodSync(dir, 0o755);
const pg = await startPostgres({ dataDir: join(dir, 'data'), port: await freePort() });
const redis = new Redis(redisServer.url, { enableAutoPipelining: true });
const journal = await Journal.open(pg.url, { max: 4 });
// Ctrl-C stops the servers this bench started, not only a run that ends.
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    void pg.stop().finally(() => redisServer.stop().finally(() => process.exit(130)));
  });
try {
  const metering = new Metering(redis);
  const accounts: string[] = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const { id } = await new Accounts(redis).create({ name: `bench ${i}`, country: 'US' });
    await metering.topUp({ accountId: id, topUpId: newId('topup'), amount: 4e15 });
    accounts.push(id);
  }
  const write = async (n: number): Promise<number> => {
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        for (let i = next++; i < n; i = next++) {
          const requestId = newId('req');
          await metering.charge({
            accountId: accounts[i % ACCOUNTS]!,
            chargeId: requestId,
            cost: 1_000 + (i % 5_000),
            usage: {
              keyId: `key_${i % 8}`,
              model: 'Meta-Llama/Llama-3.1-8B-Instruct',
              kind: 'chat',
              inputTokens: 120 + (i % 300),
              cachedTokens: i % 64,
              outputTokens: 40 + (i % 200),
              requestId,
            },
          });
        }
      }),
    );
    return n / ((performance.now() - t0) / 1000);
  };
  const archiver = new Archiver(redis, journal, { accountsPerRound: Number(values['accounts-per-round']) });

  // (1) The backlog, drained alone.
  const writeRate = await write(RECORDS);
  const t1 = performance.now();
  const drained = await archiver.drain();
  const drainRate = drained / ((performance.now() - t1) / 1000);

  // (2) Under load: writers and the archiver at once.
  let writing = true;
  let longest = 0;
  let archived = 0;
  const t2 = performance.now();
  const archiving = (async () => {
    while (writing) {
      const p = await archiver.pass();
      archived += p.read;
      if (p.read === 0) await new Promise((r) => setTimeout(r, 5));
      for (const a of accounts.slice(0, 8))
        longest = Math.max(longest, await redis.xlen(accountKeys(a).usage));
    }
  })();
  const loadWriteRate = await write(RECORDS);
  const writeEnd = performance.now();
  writing = false;
  await archiving;
  const archivedDuring = archived;
  archived += await archiver.drain();
  const catchUpMs = performance.now() - writeEnd;
  const total = Number((await journal.pool.query('select count(*) as n from transfers')).rows[0].n);

  const f = (x: number) => Math.round(x).toLocaleString('en-US');
  console.log(`records per phase: ${RECORDS}, accounts: ${ACCOUNTS}, writers: ${WRITERS}`);
  console.log('| phase | records/s |');
  console.log('| --- | ---: |');
  console.log(`| (1) writes alone (Metering.charge, ${WRITERS} concurrent) | ${f(writeRate)} |`);
  console.log(`| (1) archiver draining the backlog alone | ${f(drainRate)} |`);
  console.log(`| (2) writes while the archiver runs | ${f(loadWriteRate)} |`);
  console.log(
    `| (2) archiver while the writes run | ${f(archivedDuring / ((writeEnd - t2) / 1000))} (then ${f(catchUpMs)} ms to catch up) |`,
  );
  console.log(`longest stream seen under load (8 accounts sampled): ${longest}`);
  // `transfers` is partitioned by month (002 migration): the parent holds nothing, its months do.
  const size = Number(
    (
      await journal.pool.query(
        "select coalesce(sum(pg_total_relation_size(inhrelid)), 0) as b from pg_inherits where inhparent = 'transfers'::regclass",
      )
    ).rows[0].b,
  );
  console.log(
    `journal transfers: ${total} (expected ${2 * RECORDS + ACCOUNTS}), ${Math.round(size / total)} bytes each on disk, indexes included`,
  );
} finally {
  await journal.close();
  redis.disconnect();
  await pg.stop();
  await redisServer.stop();
  rmSync(dir, { recursive: true, force: true });
}
