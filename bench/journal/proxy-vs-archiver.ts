// The archiver against the proxy, in one run on one machine (issue 23's target: the archiver moves
// records at ≥ 3× the rate the proxy settles them at full load). A real proxy process (as
// bench/proxy/run.ts starts it: compiled, the simulator engine, its own Redis) and a real
// PostgreSQL with its durable defaults (fsync on, synchronous commit):
//   (a) the proxy at full load — non-streaming chat from N connections spread over the accounts'
//       keys — counting the usage records it settled into Redis per second;
//   (b) the archiver draining exactly those records (the backlog (a) left) into the journal, alone;
//   (c) the proxy at full load again with its own archiver running beside it (the proxy holds the
//       journal lock, as one replica of a fleet does): both rates, and the longest stream seen.
// The ratio is (b) / (a). The proxy's journal keeper is kept from leading during (a) and (b) by a
// foreign holder of its lock.
//
//   npx tsx bench/journal/proxy-vs-archiver.ts [--seconds 15] [--rounds 3] [--connections 32] [--accounts 16]
//   (BENCH_BUILT=1 reuses dist/ — only when built from this tree: a proxy built before a journal
//   migration refuses the journal, and (c) then archives nothing; BENCH_TSX=1 runs the sources)
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { startPostgres } from '../../cli/postgres-server.ts';
import { Accounts } from '../../core/accounts/accounts.ts';
import { Metering } from '../../core/billing/index.ts';
import { freePort } from '../../core/free-port.ts';
import { Archiver, Journal } from '../../core/journal/index.ts';
import { ApiKeys } from '../../core/keys/index.ts';
import { accountKeys, globalKeys } from '../../core/redis/keyspace.ts';
import { cpuUs } from '../proxy/proc-cpu.ts';
import { startStack, WARMUP_S } from '../proxy/stack.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '15' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '32' },
    accounts: { type: 'string', default: '16' },
  },
});
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const CONNECTIONS = Number(values.connections);
const ACCOUNTS = Number(values.accounts);
const KEK = Buffer.alloc(32, 23);

const dir = mkdtempSync(join(tmpdir(), 'mp-bench-pg-'));
chmodSync(dir, 0o755);
const pg = await startPostgres({ dataDir: join(dir, 'data'), port: await freePort() });
const stack = await startStack({
  proxyEnv: {
    // Keys below are made with this key-encryption key (the stack's own seeded key is not used).
    MODELPLANE_KEK: KEK.toString('hex'),
    DATABASE_URL: pg.url,
    JOURNAL_ARCHIVE_INTERVAL_MS: '100',
  },
});
const redis = new Redis(stack.redisUrl, { enableAutoPipelining: true });
const journal = await Journal.open(pg.url, { max: 4 });
/** CPU time (µs) of the PostgreSQL server: its postmaster and every process it started. */
const postmaster = Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
function pgCpuUs(): number {
  let us = cpuUs(postmaster);
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster) us += cpuUs(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return us;
}
const stopAll = async () => {
  await journal.close().catch(() => {});
  redis.disconnect();
  await stack.stop();
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
};
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void stopAll().finally(() => process.exit(130)));

try {
  // The proxy's keeper must not archive during (a) and (b): someone else "leads".
  await redis.set(globalKeys.journalLock, 'bench-holds-it');
  const keys = new ApiKeys(redis, { brand: 'service', kek: KEK });
  const accounts: string[] = [];
  const secrets: string[] = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const { id } = await new Accounts(redis).create({ name: `bench ${i}`, country: 'US' });
    await new Metering(redis).topUp({ accountId: id, topUpId: `seed-${i}`, amount: 4e15 });
    accounts.push(id);
    secrets.push((await keys.create(id, { name: `bench ${i}` })).secret);
  }
  const streamTotal = async () => {
    let n = 0;
    for (const a of accounts) n += await redis.xlen(accountKeys(a).usage);
    return n;
  };
  const journalRows = async () =>
    Number((await journal.pool.query('select count(*) as n from transfers')).rows[0].n);

  /** Full load on the proxy: calls/s, settled records/s (counted in Redis), its CPU per call. */
  const load = async (seconds: number) => {
    const before = await streamTotal();
    const archivedBefore = await journalRows();
    const cpu = cpuUs(stack.proxy.pid);
    const cpuPath = cpu + cpuUs(stack.sim.pid) + cpuUs(stack.redisPid);
    const t0 = performance.now();
    // One load generator per key, its connections a share of the total: a request built once per
    // generator (autocannon's setupRequest, one key per call, rebuilt every request and capped
    // the load generator at half the proxy's rate).
    const shares = secrets.map(
      (_, i) => Math.floor(CONNECTIONS / secrets.length) + (i < CONNECTIONS % secrets.length ? 1 : 0),
    );
    const all = await Promise.all(
      secrets.flatMap((secret, i) =>
        shares[i]! === 0
          ? []
          : [
              autocannon({
                url: `${stack.proxy.url}/v1/chat/completions`,
                method: 'POST',
                headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
                body: stack.plain,
                connections: shares[i]!,
                duration: seconds,
              }),
            ],
      ),
    );
    const dt = (performance.now() - t0) / 1000;
    const total = all.reduce((s, r) => s + r.requests.total, 0);
    const bad = all.reduce((s, r) => s + r.non2xx + r.errors, 0);
    if (bad > 0) throw new Error(`proxy: ${bad} non-2xx or errors`);
    return {
      calls: total / dt,
      cpuPerCallUs: (cpuUs(stack.proxy.pid) - cpu) / total,
      // The whole serving path's CPU a call: proxy, engine and Redis (not the load generator).
      pathCpuPerCallUs:
        (cpuUs(stack.proxy.pid) + cpuUs(stack.sim.pid) + cpuUs(stack.redisPid) - cpuPath) / total,
      calledTotal: total,
      // Records in Redis now (the streams) plus what an archiver moved out meanwhile.
      settled: (await streamTotal()) - before + ((await journalRows()) - archivedBefore),
      seconds: dt,
    };
  };

  // Warm-up (JIT, keep-alive pools, key caches), then the streams archived empty so (b) drains
  // exactly (a)'s records.
  await load(WARMUP_S);
  const archiver = new Archiver(redis, journal);
  await archiver.drain();

  // (a) and (b) take turns over ROUNDS rounds (this machine's speed drifts with the other work on
  // it; a slow spell that fell on one phase alone would move the ratio).
  let settledN = 0;
  let settledS = 0;
  let drainedN = 0;
  let drainedS = 0;
  let calls = 0;
  let cpuPerCall = 0;
  let pathCpu = 0;
  const loads: number[] = [];
  const split = { node: 0, pg: 0, redis: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    loads.push(loadavg()[0]!);
    const a = await load(SECONDS / ROUNDS);
    settledN += a.settled;
    settledS += a.seconds;
    calls += a.calledTotal;
    cpuPerCall += a.cpuPerCallUs * a.calledTotal;
    pathCpu += a.pathCpuPerCallUs * a.calledTotal;
    // The outbox may still be settling the last calls: (b) drains whatever reached Redis.
    await new Promise((r) => setTimeout(r, 300));
    const cpu0 = { node: process.cpuUsage(), pg: pgCpuUs(), redis: cpuUs(stack.redisPid) };
    const tb = performance.now();
    const n = await archiver.drain();
    drainedS += (performance.now() - tb) / 1000;
    drainedN += n;
    const nodeUs = process.cpuUsage(cpu0.node);
    split.node += nodeUs.user + nodeUs.system;
    split.pg += pgCpuUs() - cpu0.pg;
    split.redis += cpuUs(stack.redisPid) - cpu0.redis;
    process.stderr.write('.');
  }
  const settledA = settledN / settledS;
  const drainRate = drainedN / drainedS;

  // (c) The proxy at full load with its own archiver beside it (its keeper leads from now on).
  await redis.del(globalKeys.journalLock);
  const loadC = loadavg()[0]!;
  let longest = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      for (const acct of accounts.slice(0, 8))
        longest = Math.max(longest, await redis.xlen(accountKeys(acct).usage));
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const rowsBeforeC = await journalRows();
  const c = await load(SECONDS);
  const archivedC = ((await journalRows()) - rowsBeforeC) / c.seconds;
  sampling = false;
  await sampler;
  const tCatch = performance.now();
  while ((await streamTotal()) > 0 && performance.now() - tCatch < 60_000)
    await new Promise((r) => setTimeout(r, 20));
  const catchUpMs = performance.now() - tCatch;
  const left = await streamTotal();

  const f = (x: number) => Math.round(x).toLocaleString('en-US');
  console.log(
    `proxy: ${CONNECTIONS} connections, non-streaming chat, ${ACCOUNTS} accounts, ${SECONDS} s per phase`,
  );
  console.log('| phase | load avg (1 min) | calls/s | settled records/s | archived records/s |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  console.log(
    `| (a) proxy at full load, no archiver (${f(cpuPerCall / calls)} µs proxy CPU a call) | ${loads.map((l) => l.toFixed(1)).join(', ')} | ${f(calls / settledS)} | **${f(settledA)}** | |`,
  );
  console.log(`| (b) archiver draining (a)'s records (${f(drainedN)}), alone | | | | **${f(drainRate)}** |`);
  console.log(
    `| (c) proxy at full load, its archiver beside it | ${loadC.toFixed(1)} | ${f(c.calls)} | ${f(c.settled / c.seconds)} | ${f(archivedC)} (then ${f(catchUpMs)} ms to catch up${left > 0 ? `; ${left} left` : ''}) |`,
  );
  console.log(`ratio (b)/(a): ${(drainRate / settledA).toFixed(2)}×`);
  console.log(
    `archiver CPU a record in (b): node ${f(split.node / drainedN)} µs, PostgreSQL ${f(split.pg / drainedN)} µs, Redis ${f(split.redis / drainedN)} µs`,
  );
  const archiverCpu = (split.node + split.pg + split.redis) / drainedN;
  console.log(
    `CPU a settled call (proxy + simulator + Redis): ${f(pathCpu / calls)} µs; CPU an archived record: ${f(archiverCpu)} µs; ratio ${(pathCpu / calls / archiverCpu).toFixed(2)}×`,
  );
  console.log(`longest stream seen in (c) (8 accounts sampled every 50 ms): ${longest}`);
} finally {
  await stopAll();
}
