// Issue 38: a Redis Cluster failover stops only what it must. The production settings: a 6-node
// cluster (3 primaries + 3 replicas, AOF), REDIS_WAIT_REPLICAS=1, the PostgreSQL journal, two
// proxies; load over accounts on every shard. The primary holding the most of them is SIGKILLed
// mid-load; its replica is promoted and, its old primary not back, has no replica (WAIT 1 cannot be
// met: the degraded state RedisShardWithoutReplicas, billed through); the old node comes back late
// and rejoins as a replica. What must hold:
// - the other shards' accounts see no failure beyond noise (NOISE below);
// - the killed shard's accounts are served again within the promotion plus RECOVERY_MS;
// - every non-200 is a retryable 500 with Retry-After;
// - every delivered call is charged once, nothing refused is charged, `ledger check` is clean.
// The figures the run measured are printed (docs/redis-cluster.md "What a failover costs").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replicaReports } from '../../core/billing/replica-reports.ts';
import { Journal } from '../../core/journal/index.ts';
import { hashSecret } from '../../core/keys/secret.ts';
import { parseDecimalToNano } from '../../core/money.ts';
import { accountKeys, globalKeys } from '../../core/redis/keyspace.ts';
import { postgresForFile } from '../helpers/postgres.ts';
import { clusterAsTestRedis } from '../helpers/redis.ts';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.ts';
import { eventually, type Fleet, ledgerCheckCli, MODEL, type ProxyProcess, startFleet } from './fleet.ts';

/**
 * The killed shard's accounts are served again within this of the promotion: the outbox's longest
 * backoff (2 s) and the client's slot-map refresh, with room for a loaded 2-core machine.
 */
const RECOVERY_MS = 6_000;
/** The other shards' accounts: at most this share of their calls may fail (a loaded machine's noise). */
const NOISE = 0.02;
/** The old primary comes back this long after the kill: well after the promotion. */
const LATE_MS = 15_000;

interface Call {
  account: string;
  status: number | null;
  retryAfter: string | null;
  requestId: string | null;
  /** A failure's error message. */
  error?: string;
  startedAt: number;
  endedAt: number;
}

async function chat(p: ProxyProcess, account: string, secret: string): Promise<Call> {
  const call: Call = {
    account,
    status: null,
    retryAfter: null,
    requestId: null,
    startedAt: Date.now(),
    endedAt: 0,
  };
  try {
    const res = await fetch(`${p.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'shard' }], max_tokens: 4 }),
      signal: AbortSignal.timeout(30_000),
    });
    const body = await res.text();
    call.status = res.status;
    if (res.status !== 200)
      call.error = (JSON.parse(body) as { error?: { message?: string } }).error?.message ?? body;
    call.retryAfter = res.headers.get('retry-after');
    call.requestId = res.headers.get('x-request-id');
  } catch {
    // No answer at all: counted as a failure that is not a retryable 500.
  }
  call.endedAt = Date.now();
  return call;
}

const countBy = <T>(xs: T[], key: (x: T) => string) => {
  const out: Record<string, number> = {};
  for (const x of xs) out[key(x)] = (out[key(x)] ?? 0) + 1;
  return out;
};

const slowest = (xs: Call[]) => Math.max(0, ...xs.map((c) => c.endedAt - c.startedAt));

const db = postgresForFile();
let cluster: TestRedisCluster;
let fleet: Fleet;
let journal: Journal;
beforeAll(async () => {
  cluster = await startRedisCluster({ aof: true });
  fleet = await startFleet({ credit: parseDecimalToNano('50'), redis: await clusterAsTestRedis(cluster) });
  journal = await Journal.open(db.url);
});
afterAll(async () => {
  await fleet?.stop();
  await journal?.close();
});

describe('a Redis Cluster primary killed under load, with the production settings', () => {
  it('BILL-5 ERR-3 only its shard pauses, for the failover; billing goes on without its replica; every charge once', async () => {
    // Two accounts (or more) on each primary.
    const accounts: { id: string; secret: string; primary: number }[] = [];
    const add = async (id: string, secret: string) =>
      accounts.push({ id, secret, primary: await cluster.primaryOf(accountKeys(id).account) });
    await add(fleet.accountId, fleet.secret);
    const enough = () => {
      const per = new Map<number, number>();
      for (const a of accounts) per.set(a.primary, (per.get(a.primary) ?? 0) + 1);
      return per.size === 3 && [...per.values()].every((n) => n >= 2);
    };
    for (let i = 0; i < 40 && !enough(); i++) {
      const a = await fleet.addAccount(parseDecimalToNano('50'));
      await add(a.accountId, a.secret);
    }
    const byPrimary = new Map<number, number>();
    for (const a of accounts) byPrimary.set(a.primary, (byPrimary.get(a.primary) ?? 0) + 1);
    const busiest = [...byPrimary].sort((x, y) => y[1] - x[1])[0]![0];
    const onKilled = new Set(accounts.filter((a) => a.primary === busiest).map((a) => a.id));
    // Issue 38 #4, measured: where the global keys a call may touch live.
    const where = {
      // Each account's expiry index (one per block of slots): for how many is it on another primary?
      holdsDue: await Promise.all(accounts.map((a) => cluster.primaryOf(globalKeys.holdsDue(a.id)))),
      'mp:catalogue': await cluster.primaryOf(globalKeys.catalogue),
      'mp:epoch': await cluster.primaryOf('mp:epoch'),
      keyhashes: await Promise.all(
        accounts.map((a) => cluster.primaryOf(globalKeys.keyByHash(hashSecret(a.secret)))),
      ),
    };

    const env = {
      REDIS_WAIT_REPLICAS: '1',
      DATABASE_URL: db.url,
      JOURNAL_ARCHIVE_INTERVAL_MS: '200',
      PROXY_REPLICA_REPORT_MS: '500',
      // FAILOVER_PROXY_LEASES=false measures the leases-off row of docs/redis-cluster.md.
      ...(process.env.FAILOVER_PROXY_LEASES ? { PROXY_LEASES: process.env.FAILOVER_PROXY_LEASES } : {}),
    };
    const proxies = [await fleet.startProxy('a', env), await fleet.startProxy('b', env)];

    const calls: Call[] = [];
    let running = true;
    const workers = accounts.flatMap((a) =>
      [0, 1, 2].map(async (w) => {
        for (let i = 0; running; i++) {
          const c = await chat(proxies[(w + i) % 2]!, a.id, a.secret);
          calls.push(c);
          if (c.status !== 200) await new Promise((r) => setTimeout(r, 50));
        }
      }),
    );
    const served = (ids: Set<string> | null, since: number) =>
      calls.filter((c) => c.status === 200 && c.startedAt >= since && (ids === null || ids.has(c.account)))
        .length;
    await eventually(async () => served(null, 0) >= 100, 'calls are served before the kill', 60_000);

    // Readiness and the degraded gauge, sampled through the run.
    const seen = { readyzDegraded: 0, readyzUnready: 0, gaugeMax: 0 };
    const sampler = (async () => {
      while (running) {
        for (const p of proxies) {
          try {
            const r = await fetch(`${p.url}/readyz`);
            const body = (await r.json()) as { reasons?: string[] };
            if (r.status !== 200) seen.readyzUnready++;
            else if (body.reasons?.some((x) => x.startsWith('Redis primaries without the replicas')))
              seen.readyzDegraded++;
            const m = /^mp_proxy_redis_shards_without_replicas (\d+)/m.exec(
              await (await fetch(p.metricsUrl)).text(),
            );
            seen.gaugeMax = Math.max(seen.gaugeMax, Number(m?.[1] ?? 0));
          } catch {}
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    })();

    const killedAt = Date.now();
    await cluster.kill(busiest);
    await cluster.waitForFailover(busiest);
    const promotedAt = Date.now();
    await new Promise((r) => setTimeout(r, Math.max(0, killedAt + LATE_MS - Date.now())));
    const restartedAt = Date.now();
    await cluster.restart(busiest);
    // The shard has a replica again once the old node has synced from the promoted one.
    const promoted = await cluster.primaryOf(accountKeys([...onKilled][0]!).account);
    await eventually(
      async () => /slave0:.*state=online/.test(await cluster.node(promoted).info('replication')),
      'the old primary rejoined as a replica',
      60_000,
    );
    const rejoinedAt = Date.now();
    await eventually(
      async () => served(onKilled, rejoinedAt) >= 20,
      'the killed shard served after the rejoin',
      60_000,
    );
    running = false;
    await Promise.all(workers);
    await sampler;

    // Every proxy sent all it owed (the degraded shard's held settlements left the journal).
    await eventually(
      async () => {
        const rs = await replicaReports(fleet.redis.client());
        return proxies.every((p) =>
          rs.some((r) => r.replica.endsWith(p.dataDir) && r.owed === 0 && r.reportedAtMs > rejoinedAt),
        );
      },
      'the proxies owe nothing',
      60_000,
    );
    // The keeper archived every stream to its end: the journal is the ground truth of charges.
    const r = fleet.redis.client();
    await eventually(
      async () =>
        (await Promise.all(accounts.map((a) => r.xlen(accountKeys(a.id).usage)))).every((n) => n === 0),
      'every stream archived',
      60_000,
    );

    const failed = calls.filter((c) => c.status !== 200);
    const others = calls.filter((c) => !onKilled.has(c.account));
    const othersFailed = others.filter((c) => c.status !== 200);
    const killedFailed = failed.filter((c) => onKilled.has(c.account));
    const lastKilledFailure = Math.max(killedAt, ...killedFailed.map((c) => c.endedAt));
    const report = {
      accounts: accounts.length,
      onKilledShard: onKilled.size,
      calls: calls.length,
      promotionMs: promotedAt - killedAt,
      restartedAfterMs: restartedAt - killedAt,
      rejoinedAfterMs: rejoinedAt - killedAt,
      killedShard: {
        failed: killedFailed.length,
        lastFailureAfterKillMs: lastKilledFailure - killedAt,
        // When they ended, in seconds after the kill, and what they said.
        bySecond: countBy(killedFailed, (c) => String(Math.floor((c.endedAt - killedAt) / 1000))),
        errors: countBy(killedFailed, (c) => c.error ?? String(c.status)),
      },
      otherShards: {
        calls: others.length,
        failed: othersFailed.length,
        // The slowest of their calls before the kill and during the failover (a figure, not a bound):
        // a call that touches a global key on the dead primary waits for the promotion.
        slowestBeforeMs: slowest(others.filter((c) => c.endedAt < killedAt)),
        slowestDuringMs: slowest(others.filter((c) => c.startedAt >= killedAt && c.startedAt < promotedAt)),
      },
      seen,
      globalKeysOnKilled: {
        holdsDueOfOtherShards: where.holdsDue.filter(
          (p, i) => p === busiest && accounts[i]!.primary !== busiest,
        ).length,
        catalogue: where['mp:catalogue'] === busiest,
        epoch: where['mp:epoch'] === busiest,
        keyhashes: where.keyhashes.filter((p) => p === busiest).length,
      },
    };
    console.log(`cluster shard failover: ${JSON.stringify(report)}`);
    if (killedFailed.length > 0)
      for (const p of proxies) console.log(`proxy ${p.name} said:\n${p.output().slice(-4000)}`);

    // Every non-200 is a retryable 500 with Retry-After.
    expect(failed.filter((c) => c.status !== 500 || c.retryAfter === null).map((c) => c.status)).toEqual([]);
    // The other shards: noise at most.
    expect(othersFailed.length, JSON.stringify(report)).toBeLessThanOrEqual(Math.ceil(NOISE * others.length));
    // The killed shard: served again within the promotion plus the bound, and through the degraded
    // state (its replica gone) until the old node rejoined.
    expect(lastKilledFailure - promotedAt, JSON.stringify(report)).toBeLessThanOrEqual(RECOVERY_MS);
    expect(served(onKilled, promotedAt + RECOVERY_MS)).toBeGreaterThan(0);
    expect(seen.gaugeMax, JSON.stringify(report)).toBe(1);
    expect(seen.readyzDegraded).toBeGreaterThan(0);
    // Neither proxy turned unready for one shard's outage (a load balancer would have taken it away
    // from every account).
    expect(seen.readyzUnready, JSON.stringify(report)).toBe(0);

    // Money: each delivered call charged once, nothing else charged.
    const delivered = new Set(calls.filter((c) => c.status === 200).map((c) => c.requestId!));
    const charges = new Map<string, number>();
    for (const a of accounts)
      for (const rec of await journal.archivedAfter(a.id, '0-0'))
        if (rec.kind === 'charge') charges.set(rec.requestId!, (charges.get(rec.requestId!) ?? 0) + 1);
    const unbilled = [...delivered].filter((id) => !charges.has(id));
    const double = [...charges].filter(([, n]) => n > 1);
    const unknown = [...charges.keys()].filter((id) => !delivered.has(id));
    expect({ unbilled, double, unknown }).toEqual({ unbilled: [], double: [], unknown: [] });

    // Live, while the proxies still hold leases. A lease's entry in the sweeper's index (a hint,
    // in its slot block's key) written to the killed primary just before it died may not have
    // reached the replica that took over; the lease's next renewal (every third of its ttl) or its
    // release files it again. So that one finding may stand for a renewal, no longer.
    const deadline = Date.now() + 60_000;
    let live = await ledgerCheckCli(fleet, { DATABASE_URL: db.url });
    while (
      live.code !== 0 &&
      Date.now() < deadline &&
      live.output
        .split('\n')
        .filter((l) => /^ {2}acct_/.test(l))
        .every((l) => /is missing from the sweeper's index$/.test(l))
    ) {
      await new Promise((r) => setTimeout(r, 2_000));
      live = await ledgerCheckCli(fleet, { DATABASE_URL: db.url });
    }
    expect(live.code, live.output).toBe(0);
    for (const p of proxies) p.proc.kill('SIGTERM');
    await Promise.all(proxies.map((p) => p.exited));
    const after = await ledgerCheckCli(fleet, { DATABASE_URL: db.url });
    expect(after.code, after.output).toBe(0);
  }, 300_000);
});
