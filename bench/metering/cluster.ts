// Settled calls per second on one Redis vs a Redis Cluster of three primaries (and three replicas),
// in one run on one machine: reserve+settle pairs (one settled call each) spread over many
// accounts, through the client the proxy uses (auto-pipelined). Beside the rate the client
// reached, each primary's own CPU time per settled call (INFO cpu) and its share of the calls — the
// rate each primary could carry, which is what scales out: a cluster's ceiling is the sum of its
// primaries'. Starts its servers and stops them; takes half a minute.
//   npx tsx bench/metering/cluster.ts [--concurrency 96] [--seconds 3] [--accounts 192]
import { parseArgs } from 'node:util';
import { Metering } from '../../core/billing/metering.ts';
import { connectRedis, primaries, type Redis, serverOf } from '../../core/redis/client.ts';
import { accountKeys } from '../../core/redis/keyspace.ts';
import { startRedis } from '../../test/helpers/redis.ts';
import { startRedisCluster } from '../../test/helpers/redis-cluster.ts';
import { pairs, type Result } from './pairs.ts';

const { values } = parseArgs({
  options: {
    concurrency: { type: 'string', default: '96' },
    seconds: { type: 'string', default: '3' },
    accounts: { type: 'string', default: '192' },
  },
});
const concurrency = Number(values.concurrency);
const durationMs = Number(values.seconds) * 1000;
const accounts = Array.from({ length: Number(values.accounts) }, (_, i) => `cbench${i}`);

interface PrimaryLoad {
  port: number;
  calls: number;
  cpuUsPerCall: number;
}

const cpuSeconds = async (node: ReturnType<typeof primaries>[number]) => {
  const info = await node.info('cpu');
  const get = (f: string) => Number(info.match(new RegExp(`${f}:([\\d.]+)`))?.[1] ?? 0);
  return get('used_cpu_user') + get('used_cpu_sys');
};

async function runOn(redis: Redis): Promise<{ result: Result; loads: PrimaryLoad[] }> {
  const metering = new Metering(redis);
  for (const accountId of accounts) await metering.topUp({ accountId, topUpId: 'seed', amount: 1e15 });
  await pairs(concurrency, metering, (w) => accounts[w % accounts.length]!, 500); // warm-up
  const nodes = primaries(redis);
  // Each primary's settled calls: the growth of the usage streams of the accounts it holds.
  const streamLen = async () =>
    Promise.all(accounts.map(async (a) => [a, await redis.xlen(accountKeys(a).usage)] as const));
  const lenBefore = new Map(await streamLen());
  const cpuBefore = await Promise.all(nodes.map(cpuSeconds));
  let spin = 0;
  const result = await pairs(
    concurrency,
    metering,
    (w) => accounts[(w + spin++) % accounts.length]!,
    durationMs,
  );
  const cpuAfter = await Promise.all(nodes.map(cpuSeconds));
  const lenAfter = new Map(await streamLen());
  // Which primary holds each account: the node that answers for its slot.
  const holder = new Map<string, string>();
  for (const a of accounts) holder.set(a, await portOf(redis, accountKeys(a).usage));
  const loads = nodes.map((n, i) => {
    const port = String(n.options.port);
    const calls = accounts
      .filter((a) => holder.get(a) === port)
      .reduce((s, a) => s + (lenAfter.get(a)! - lenBefore.get(a)!), 0);
    const cpuUs = (cpuAfter[i]! - cpuBefore[i]!) * 1e6;
    return { port: Number(port), calls, cpuUsPerCall: calls > 0 ? cpuUs / calls : 0 };
  });
  for (const a of accounts) {
    const b = await metering.balance(a);
    if (b.held !== 0) throw new Error(`${a} kept ${b.held} held after the bench`);
  }
  return { result, loads };
}

async function portOf(redis: Redis, key: string): Promise<string> {
  return String((await serverOf(redis, key)).options.port);
}

async function main(): Promise<void> {
  // The one server has a replica too, as each primary of the cluster has: both pay for replication.
  const single = await startRedis();
  const singleReplica = await startRedis({ replicaOf: { port: single.port } });
  const cluster = await startRedisCluster();
  const clients: Redis[] = [];
  const connect = (url: string) => {
    // As the proxy connects: auto-pipelined.
    const c = connectRedis(url, { enableAutoPipelining: true, maxRetriesPerRequest: 2 });
    clients.push(c);
    return c;
  };
  try {
    const one = await runOn(connect(single.url));
    const three = await runOn(connect(cluster.url));
    const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
    const ceiling = (loads: PrimaryLoad[]) =>
      loads.reduce((s, l) => s + (l.cpuUsPerCall > 0 ? 1e6 / l.cpuUsPerCall : 0), 0);
    const rows = (name: string, r: { result: Result; loads: PrimaryLoad[] }) => [
      `| ${name} | ${fmt(r.result.perSecond)} | ${fmt(r.result.perSecond / r.loads.length)} | ${r.result.p50.toFixed(2)} | ${r.result.p99.toFixed(2)} | ${r.loads.map((l) => `${fmt(l.calls)} @ ${l.cpuUsPerCall.toFixed(1)} µs`).join(', ')} | ${fmt(ceiling(r.loads))} |`,
    ];
    const version =
      (await primaries(clients[0]!)[0]!.info('server')).match(/redis_version:(\S+)/)?.[1] ?? '?';
    console.log(
      [
        `Redis Cluster bench: reserve+settle pairs over ${accounts.length} accounts, concurrency ${concurrency}, ${durationMs / 1000} s per row, one client process (auto-pipelined), redis ${version}, node ${process.version}`,
        '',
        '| Redis | settled calls/s | per primary | p50 ms | p99 ms | calls taken by each primary @ its CPU per call | ceiling (sum of 1e6 / CPU µs per call) |',
        '|---|---:|---:|---:|---:|---|---:|',
        ...rows('one server + 1 replica', one),
        ...rows('cluster, 3 primaries + 3 replicas', three),
      ].join('\n'),
    );
  } finally {
    await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
    await cluster.stop();
    await singleReplica.stop();
    await single.stop();
  }
}

await main();
