// Chaos on a Redis Cluster (3 primaries + 3 replicas): the primary that holds the account is killed
// under load and its replica is promoted. Redis replication is asynchronous — here made certain to
// lag by stopping the replica and cutting its link while the primary acknowledges settlements — so the promoted replica
// lacks settlements the proxy was told were done. The proxy keeps serving through the failover,
// and `modelplane ledger check` names exactly what was lost: the calls clients were delivered that
// the ledger no longer charges, by their settlement, count and cost. The proxy runs with the
// journal (PostgreSQL), as production does: its keeper archives the cluster's streams through the
// failover, and what it archived before the primary died is remembered there — the check, reading
// the journal too, says Redis lost it (issue 40).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replicaReports } from '../../core/billing/replica-reports.ts';
import { Journal, type JournalRecord } from '../../core/journal/index.ts';
import { parseDecimalToNano } from '../../core/money.ts';
import { accountKeys } from '../../core/redis/keyspace.ts';
import { postgresForFile } from '../helpers/postgres.ts';
import { clusterAsTestRedis } from '../helpers/redis.ts';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.ts';
import { eventually, type Fleet, ledgerCheckCli, MODEL, type ProxyProcess, startFleet } from './fleet.ts';

interface Delivered {
  id: string;
  /** At the catalogue's prices (input 1, output 2 per 1M tokens): nano. */
  cost: number;
  endedAt: number;
}

async function chat(p: ProxyProcess, secret: string): Promise<Delivered | null> {
  try {
    const res = await fetch(`${p.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL,
        messages: [{ role: 'user', content: 'failover' }],
        max_tokens: 8,
      }),
    });
    const body = (await res.json()) as { usage?: { prompt_tokens: number; completion_tokens: number } };
    if (res.status !== 200) return null;
    const u = body.usage!;
    return {
      id: res.headers.get('x-request-id')!,
      cost: u.prompt_tokens * 1_000 + u.completion_tokens * 2_000,
      endedAt: Date.now(),
    };
  } catch {
    return null; // the proxy refused or dropped it: not delivered, must not be charged
  }
}

/** Calls from `workers` clients in a loop until stopped; what each client was delivered. */
function load(p: ProxyProcess, secret: string, workers: number) {
  const delivered: Delivered[] = [];
  let running = true;
  const done = Promise.all(
    Array.from({ length: workers }, async () => {
      while (running) {
        const d = await chat(p, secret);
        if (d) delivered.push(d);
        else await new Promise((r) => setTimeout(r, 20));
      }
    }),
  );
  return {
    delivered,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

/** A stream id's order: [ms, seq]. */
const idOf = (id: string) => id.split('-').map(Number) as [number, number];
const after = (a: string, b: string) => {
  const [am, as] = idOf(a);
  const [bm, bs] = idOf(b);
  return am > bm || (am === bm && as > bs);
};

const db = postgresForFile();
let cluster: TestRedisCluster;
let fleet: Fleet;
let journal: Journal;
beforeAll(async () => {
  cluster = await startRedisCluster();
  fleet = await startFleet({ credit: parseDecimalToNano('50'), redis: await clusterAsTestRedis(cluster) });
  journal = await Journal.open(db.url);
});
afterAll(async () => {
  await fleet?.stop();
  await journal?.close();
});

describe('a Redis Cluster primary killed under load', () => {
  it('BILL-5 its replica takes over, the proxy keeps serving, and ledger check names exactly the settlements the failover lost', async () => {
    const proxy = await fleet.startProxy('a', {
      PROXY_REPLICA_REPORT_MS: '200',
      DATABASE_URL: db.url,
      JOURNAL_ARCHIVE_INTERVAL_MS: '100',
    });
    const primary = await cluster.primaryOf(accountKeys(fleet.accountId).account);
    const replica = await cluster.replicaOf(primary);
    const traffic = load(proxy, fleet.secret, 6);
    await eventually(async () => traffic.delivered.length >= 20, 'calls are served before the failover');

    // The replica stops taking the primary's writes; calls go on and are settled on the primary only.
    // Its link is cut too: a stopped process still receives into its socket buffer what the primary
    // sends, and would read it all on waking.
    cluster.pause(replica);
    await cluster.node(primary).client('KILL', 'TYPE', 'replica');
    const pausedAt = Date.now();
    const servedBefore = traffic.delivered.length;
    // Served and acknowledged to the proxy by the primary alone (lease batches settle a moment later).
    const reporter = fleet.redis.client();
    await eventually(async () => {
      if (traffic.delivered.length < servedBefore + 20) return false;
      const r = (await replicaReports(reporter)).find((x) => x.replica.endsWith(proxy.dataDir));
      return (r?.recent ?? []).filter((w) => w.atMs > pausedAt).length >= 2;
    }, 'settlements acknowledged while the replica lags');
    // Some of them archived too (the keeper passes every 100 ms) before the primary dies: entries
    // made after the replica's link was cut, which it can never have had.
    await eventually(
      async () => (await journal.archivedAfter(fleet.accountId, `${pausedAt}-0`)).length >= 2,
      'settlements archived while the replica lags',
    );
    await cluster.kill(primary);
    const killedAt = Date.now();
    cluster.resume(replica);
    // What the replica has, read from it before it is promoted (no write reaches it now: its
    // primary is dead): the account's stream up to this id survives the failover, nothing after.
    const onReplica = cluster.node(replica);
    await onReplica.call('READONLY');
    const info = (await onReplica.call('XINFO', 'STREAM', accountKeys(fleet.accountId).usage)) as unknown[];
    const kept = String(info[info.indexOf('last-generated-id') + 1]);
    await cluster.waitForFailover(primary);
    const failedOverAt = Date.now();

    // The proxy serves again on the promoted replica.
    const before = traffic.delivered.length;
    await eventually(
      async () => traffic.delivered.length >= before + 20,
      'calls served after the failover',
      60_000,
    );
    await traffic.stop();

    // Its journal drained and it reported after the failover (its report's key may have been lost too).
    let report: unknown = null;
    await eventually(
      async () => {
        const r = (await replicaReports(fleet.redis.client())).find((x) => x.replica.endsWith(proxy.dataDir));
        report = r === undefined ? null : { ...r, recent: r.recent?.length };
        return r !== undefined && r.owed === 0 && r.reportedAtMs > failedOverAt + 500;
      },
      'the proxy settled everything and reported',
      30_000,
    ).catch((err: Error) => {
      throw new Error(
        `${err.message}; its last report: ${JSON.stringify(report)}; it said:\n${proxy.output().slice(-3000)}`,
      );
    });

    // The keeper archives the streams to their end on the promoted replica too.
    const usage = accountKeys(fleet.accountId).usage;
    await eventually(
      async () => (await fleet.redis.client().xlen(usage)) === 0,
      'the stream archived',
      30_000,
    );

    // Ground truth, from the journal: every charge ever archived, each with the stream entry it
    // came from. The promoted replica has an entry when the replica had it before the primary died
    // (up to `kept`), or made it itself after (later than the kill).
    const records = (await journal.archivedAfter(fleet.accountId, '0-0')).filter((r) => r.kind === 'charge');
    const inRedis = (r: JournalRecord) =>
      r.streamId !== null && (!after(r.streamId, kept) || idOf(r.streamId)[0] > killedAt);
    const charged = new Map<string, JournalRecord[]>();
    for (const r of records.filter(inRedis))
      charged.set(r.requestId!, [...(charged.get(r.requestId!) ?? []), r]);
    // Delivered calls the ledger does not charge.
    const lost = traffic.delivered.filter((d) => !charged.has(d.id));
    expect(lost.length, 'the paused replica lacked some acknowledged settlements').toBeGreaterThan(0);
    for (const d of traffic.delivered.filter((x) => !lost.includes(x)))
      expect(charged.get(d.id)).toHaveLength(1);
    // The journal remembers some of the lost ones (archived before the primary died), and nothing else.
    const archivedLost = records.filter((r) => !inRedis(r));
    expect(archivedLost.length).toBeGreaterThanOrEqual(2);
    for (const r of archivedLost) expect(lost.map((d) => d.id)).toContain(r.requestId);

    const check = await ledgerCheckCli(fleet, { DATABASE_URL: db.url });
    expect(check.code, check.output).toBe(1);
    const named = [...check.output.matchAll(/^LOST {2}(\S+): (\S+) \((\d+) calls?, cost ([\d.]+)\)/gm)];
    expect(named.length, check.output).toBeGreaterThan(0);
    for (const m of named) expect(m[1]).toBe(fleet.accountId);
    const namedCalls = named.reduce((s, m) => s + Number(m[3]), 0);
    const namedNano = named.reduce((s, m) => s + parseDecimalToNano(m[4]!), 0);
    expect(namedCalls, check.output).toBe(lost.length);
    expect(namedNano, check.output).toBe(lost.reduce((s, d) => s + d.cost, 0));
    // And the journal says by how much Redis's balance is wrong: the charges it archived that
    // Redis lost.
    const archivedLostNano = archivedLost.reduce((s, r) => s + r.amount, 0);
    expect(check.output).toContain(`they differ by ${archivedLostNano}\n`);
  }, 180_000);
});
