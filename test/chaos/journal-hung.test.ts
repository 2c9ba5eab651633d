// Chaos: the journal's database hangs (SIGSTOP to PostgreSQL and its backends) under load through
// two proxy replicas (issue 40 item 9). The API never notices (nothing on the request path waits on
// PostgreSQL); the replicas say so — the archive lag grows from the oldest entry not archived, a
// stalled keeper is logged, and at most one replica reports itself the keeper's leader at any
// scrape — and a replica sent SIGTERM exits promptly, the database still frozen, instead of
// holding its pod past the grace period until the database answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDecimalToNano } from '../../core/money.ts';
import { scrapeMetrics } from '../helpers/metrics.ts';
import { type OwnPostgres, startOwnPostgres } from '../helpers/postgres-own.ts';
import { eventually, type Fleet, MODEL, type ProxyProcess, startFleet } from './fleet.ts';

let pg: OwnPostgres;
let fleet: Fleet;
beforeAll(async () => {
  pg = await startOwnPostgres();
  fleet = await startFleet({ credit: parseDecimalToNano('50') });
}, 120_000);
afterAll(async () => {
  await fleet?.stop();
  await pg?.stop();
});

/** Non-streamed calls from `workers` loops over the proxies until stop(); each call's status. */
function load(proxies: ProxyProcess[], workers: number) {
  const statuses: number[] = [];
  let running = true;
  const done = Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let i = 0; running; i++) {
        const p = proxies[(w + i) % proxies.length]!;
        const res = await fetch(`${p.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${fleet.secret}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
        }).catch(() => null);
        await res?.text();
        statuses.push(res?.status ?? 0);
      }
    }),
  );
  return {
    statuses,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

const metric = async (p: ProxyProcess, name: string) => (await scrapeMetrics(p.metricsUrl)).get(name) ?? 0;

describe('the journal database hung under load, two replicas', () => {
  it('the API never notices; the lag grows, the stall is logged, one leader at most; SIGTERM exits promptly', async () => {
    const env = {
      DATABASE_URL: pg.url,
      JOURNAL_ARCHIVE_INTERVAL_MS: '100',
      JOURNAL_LOCK_MS: '1000',
      JOURNAL_DB_TIMEOUT_MS: '1000',
    };
    const proxies = await Promise.all([fleet.startProxy('a', env), fleet.startProxy('b', env)]);
    const l = load(proxies, 4);
    await eventually(
      async () =>
        (await metric(proxies[0]!, 'mp_journal_archived_total')) +
          (await metric(proxies[1]!, 'mp_journal_archived_total')) >
        0,
      'calls archived',
    );

    pg.freeze();
    const frozenAt = Date.now();
    const servedBefore = l.statuses.length;
    let leaders = 0;
    while (Date.now() - frozenAt < 5_000) {
      const now = await Promise.all(proxies.map((p) => metric(p, 'mp_journal_keeper_leader')));
      leaders = Math.max(leaders, now[0]! + now[1]!);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(leaders, 'replicas saying they lead at one scrape').toBeLessThanOrEqual(1);
    const lag = Math.max(
      ...(await Promise.all(proxies.map((p) => metric(p, 'mp_journal_archive_lag_seconds')))),
    );
    expect(lag, 'the archive lag while the database hangs (main: 0)').toBeGreaterThan(3);
    expect(proxies.map((p) => p.output()).join('\n')).toContain('the journal keeper is stalled');
    await l.stop();
    const during = l.statuses.slice(servedBefore);
    expect(during.length).toBeGreaterThan(10);
    expect(during.filter((s) => s !== 200)).toEqual([]);

    // SIGTERM with the database still frozen: out well within a pod's grace period.
    const sent = Date.now();
    for (const p of proxies) p.proc.kill('SIGTERM');
    const exits = await Promise.race([
      Promise.all(proxies.map((p) => p.exited)),
      new Promise<'held'>((r) => setTimeout(() => r('held'), 15_000)),
    ]);
    expect(exits, 'exit codes (held: still running 15 s after SIGTERM)').toEqual([0, 0]);
    expect(Date.now() - sent).toBeLessThan(10_000);
    pg.thaw();
  }, 180_000);
});
