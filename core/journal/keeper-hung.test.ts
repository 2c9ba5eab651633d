// The journal keeper while its database hangs (issue 40 item 9): a real PostgreSQL of this file's
// own, frozen with SIGSTOP (the server and every backend: connections stay open, nothing answers),
// while usage keeps arriving in Redis. Two keepers run, as two proxy replicas would. Every wait
// ends (a pass fails by its timeout, and says so); the stall is said while it lasts; the lag grows
// from the oldest entry not archived; at most one keeper says it leads at any moment; both stop at
// once with the database still frozen; and when it thaws, everything is archived and the lag is 0.
// A keeper that lost the lock during the hang reports no lag: the leader says it (issue 47 item 2).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OwnPostgres, startOwnPostgres } from '../../test/helpers/postgres-own.ts';
import { redisForFile } from '../../test/helpers/redis-per-file.ts';
import { Accounts } from '../accounts/accounts.ts';
import { Metering } from '../billing/index.ts';
import { newId } from '../ids.ts';
import { globalKeys } from '../redis/keyspace.ts';
import { Journal } from './journal.ts';
import { type JournalKeeper, startJournalKeeper } from './keeper.ts';

const r = redisForFile();
let server: OwnPostgres;
beforeAll(async () => {
  server = await startOwnPostgres();
}, 120_000);
afterAll(async () => server?.stop());

const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));
async function eventually(what: string, check: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`never happened: ${what}`);
    await sleep(20);
  }
}

describe('the journal keeper, its database frozen', () => {
  it('bounded waits, the stall said, the lag from the oldest unarchived entry, one leader, a prompt stop', async () => {
    const journals = [
      await Journal.open(server.url, { timeoutMs: 800 }),
      await Journal.open(server.url, { timeoutMs: 800 }),
    ];
    const metering = new Metering(r.redis);
    const { id: accountId } = await new Accounts(r.redis).create({ name: 'Hung', country: 'US' });
    const topUp = () => metering.topUp({ accountId, topUpId: newId('topup'), amount: 1_000 });
    await topUp();

    const stalls: number[] = [];
    const errors: string[] = [];
    const keepers: JournalKeeper[] = journals.map((journal) =>
      startJournalKeeper(r.redis, journal, {
        archiveIntervalMs: 50,
        reconcileIntervalMs: 60_000,
        reconcileWindowMs: 3_600_000,
        lockTtlMs: 1_000,
        stallMs: 500,
        stopWaitMs: 500,
        onStall: ({ forMs }) => stalls.push(forMs),
        onError: (err) => errors.push(String((err as Error).message)),
      }),
    );
    const archived = () => keepers.reduce((s, k) => s + k.status.archivedTotal, 0);
    await eventually('the first top-up archived', () => archived() === 1);

    // Who says it leads, every 10 ms, from now to the end.
    let sampling = true;
    let both = 0;
    let some = 0;
    const sampler = (async () => {
      while (sampling) {
        const leaders = keepers.filter((k) => k.status.leader).length;
        if (leaders > 1) both++;
        if (leaders === 1) some++;
        await sleep(10);
      }
    })();

    server.freeze();
    const firstUnarchived = Date.now();
    for (let i = 0; i < 5; i++) {
      await topUp();
      await sleep(100);
    }
    await sleep(3_000);
    const behind = keepers.map((k) => k.status.behindSinceMs).filter((b): b is number => b !== null);
    // The lag reads from the first entry the frozen database never got, and grows (main: 0).
    expect(behind.length).toBeGreaterThan(0);
    const oldest = Math.min(...behind);
    expect(oldest).toBeGreaterThanOrEqual(firstUnarchived - 50);
    expect(oldest).toBeLessThanOrEqual(firstUnarchived + 500);
    expect(Date.now() - oldest).toBeGreaterThan(3_000);
    // Every wait ended: passes failed by their timeouts (main: they wait for ever), and said so.
    expect(
      errors.some((e) => /timeout/i.test(e)),
      errors.join('; '),
    ).toBe(true);
    expect(stalls.length).toBeGreaterThan(0);
    expect(archived()).toBe(1);

    // Both stop promptly with the database still frozen (main: until it answers).
    const stopping = Date.now();
    await Promise.all(keepers.map((k) => k.stop()));
    await Promise.all(journals.map((j) => j.close(500)));
    expect(Date.now() - stopping).toBeLessThan(2_500);
    sampling = false;
    await sampler;
    expect(both, 'samples where both keepers said they lead').toBe(0);
    expect(some).toBeGreaterThan(0);

    // Thawed: a keeper archives what waited, and the lag is 0 again.
    server.thaw();
    const journal = await Journal.open(server.url, { timeoutMs: 800 });
    const after = startJournalKeeper(r.redis, journal, {
      archiveIntervalMs: 50,
      reconcileIntervalMs: 60_000,
      reconcileWindowMs: 3_600_000,
      lockTtlMs: 1_000,
    });
    try {
      await eventually(
        'everything archived after the thaw',
        async () =>
          (await journal.creditBalance(accountId)) === 6_000n && after.status.behindSinceMs === null,
      );
    } finally {
      await after.stop();
      await journal.close();
    }
  }, 60_000);

  it('a keeper that lost the lock while the database hung reports no lag: what it failed to archive is the leader’s to say', async () => {
    const journal = await Journal.open(server.url, { timeoutMs: 500 });
    const metering = new Metering(r.redis);
    const { id: accountId } = await new Accounts(r.redis).create({ name: 'Follower', country: 'US' });
    const errors: string[] = [];
    const keeper = startJournalKeeper(r.redis, journal, {
      archiveIntervalMs: 50,
      reconcileIntervalMs: 60_000,
      reconcileWindowMs: 3_600_000,
      lockTtlMs: 1_000,
      stopWaitMs: 500,
      onError: (err) => errors.push(String((err as Error).message)),
    });
    try {
      await eventually('it leads', () => keeper.status.leader);
      server.freeze();
      await metering.topUp({ accountId, topUpId: newId('topup'), amount: 1_000 });
      await eventually('a pass failed by its timeout', () => errors.some((e) => /timeout/i.test(e)));
      expect(keeper.status.behindSinceMs).not.toBeNull(); // the leader says it is behind
      // Another replica takes the lock (this one's renewals were late while its pass hung).
      await r.redis.set(globalKeys.journalLock, 'another-replica', 'PX', 60_000);
      await eventually('it follows', () => !keeper.status.leader);
      server.thaw();
      // Main: the lag read from the entry it failed to archive, growing for ever.
      await eventually('it reports no lag', () => keeper.status.behindSinceMs === null, 5_000);
      await sleep(500);
      expect(keeper.status.behindSinceMs).toBeNull();
    } finally {
      server.thaw();
      await keeper.stop();
      await r.redis.del(globalKeys.journalLock);
      await journal.close(500);
    }
  }, 60_000);
});
