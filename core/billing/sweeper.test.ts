// The hold sweeper on real Redis: it works from the expiry index (what is due, judged by Redis time
// in each account's script), voids holds and leases whose owner stopped renewing them as ledger
// entries, re-files renewed ones, drops settled ones, and one replica of a fleet runs it at a time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { until } from '../../test/helpers/until.ts';
import { Accounts } from '../accounts/accounts.ts';
import { checkAccountLedger } from '../ledger/ledger.ts';
import { primaries } from '../redis/client.ts';
import { accountKeys, dueMember, globalKeys } from '../redis/keyspace.ts';
import { slotBlockOf } from '../redis/slot-blocks.ts';
import { usageRecords } from '../usage/usage.ts';
import { resyncHoldIndexes } from './hold-index-resync.ts';
import { LeaseMetering } from './leases.ts';
import { Metering } from './metering.ts';
import { SweepError, startHoldSweeper, sweepDueHolds, type VoidedHold } from './sweeper.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const chat = { keyId: 'k', model: 'M', kind: 'chat' as const, inputTokens: 1, outputTokens: 1 };

describe('hold sweeper', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => redis.stop());

  it('voids what expired unrenewed (as ledger entries), re-files what was renewed, drops what was settled', async () => {
    const r = redis.client();
    // Long enough that setting up three accounts on a loaded machine stays well inside it.
    const TTL = 1_500;
    const metering = new Metering(r);
    const leases = new LeaseMetering(r);
    const accounts = new Accounts(r);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const a = await accounts.create({ name: `a${i}`, country: 'US' });
      ids.push(a.id);
      await metering.topUp({ accountId: a.id, topUpId: `t${i}`, amount: 10_000 });
      await metering.reserve({ accountId: a.id, holdId: 'req_dead', min: 100, max: 400, ttlMs: TTL });
      await metering.reserve({ accountId: a.id, holdId: 'req_renewed', min: 100, max: 100, ttlMs: TTL });
      await metering.reserve({ accountId: a.id, holdId: 'req_settled', min: 50, max: 50, ttlMs: TTL });
      await leases.extendLease({ accountId: a.id, leaseId: 'lease_dead', add: 1_000, den: 2, ttlMs: TTL });
    }
    expect(await sweepDueHolds(r)).toEqual([]); // nothing is due yet
    await sleep(TTL / 2);
    for (const id of ids) {
      await metering.renew(id, 60_000, ['req_renewed']);
      await metering.settle({ accountId: id, holdId: 'req_settled', cost: 50, usage: chat });
    }
    await sleep(TTL / 2 + 250);
    const voided = await sweepDueHolds(r);
    const key = (v: VoidedHold) => `${v.accountId} ${v.holdId} ${v.amount} ${v.reason}`;
    expect(voided.map(key).sort()).toEqual(
      ids.flatMap((id) => [`${id} lease_dead 1000 lease_expired`, `${id} req_dead 400 hold_expired`]).sort(),
    );
    // The renewed hold stays, filed again at its new expiry; the settled and voided left the index.
    const due = (await Promise.all(globalKeys.holdsDueAll().map((k) => r.zrange(k, 0, -1)))).flat();
    expect(due.sort()).toEqual(ids.map((id) => `${id} req_renewed`).sort());
    for (const id of ids) {
      expect(await metering.balance(id)).toEqual({ balance: 9_950, held: 100, available: 9_850 });
      const voids = (await usageRecords(r, id)).filter((e) => e.type === 'void');
      expect(voids.map((v) => [v.opId, v.amount, v.reason]).sort()).toEqual([
        ['void:lease_dead', 1_000, 'lease_expired'],
        ['void:req_dead', 400, 'hold_expired'],
      ]);
      expect((await checkAccountLedger(r, id, { toleranceMs: 0 })).problems).toEqual([]);
    }
    expect(await sweepDueHolds(r)).toEqual([]); // a void happens once
  });

  it('costs what is due, not what exists: live holds far from expiry are not looked at', async () => {
    const r = redis.client();
    await r.flushdb();
    const metering = new Metering(r);
    const a = await new Accounts(r).create({ name: 'many', country: 'US' });
    await metering.topUp({ accountId: a.id, topUpId: 't', amount: 1_000_000 });
    for (let i = 0; i < 200; i++)
      await metering.reserve({ accountId: a.id, holdId: `req_${i}`, min: 1, max: 1, ttlMs: 60_000 });
    // Every primary's counts: on a cluster the index and the account may live on different nodes.
    for (const node of primaries(r)) await node.config('RESETSTAT');
    expect(await sweepDueHolds(r)).toEqual([]);
    const stats = (await Promise.all(primaries(r).map((node) => node.info('commandstats')))).join('\n');
    expect(stats).not.toMatch(/cmdstat_evalsha:/); // no account script ran
    // One read per expiry index (a fixed number), whatever the holds.
    const reads = [...stats.matchAll(/cmdstat_zrangebyscore:calls=(\d+),/g)].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
    expect(reads).toBe(globalKeys.holdsDueAll().length);
  });

  it("files an account's holds in the index of its own block of slots (on a cluster, its primary's, but for a block split between two) and still sweeps the one index of older releases", async () => {
    const r = redis.client();
    await r.flushdb();
    const metering = new Metering(r);
    const accounts = new Accounts(r);
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const a = await accounts.create({ name: `b${i}`, country: 'US' });
      await metering.topUp({ accountId: a.id, topUpId: 't', amount: 1_000 });
      await metering.reserve({ accountId: a.id, holdId: 'req_live', min: 10, max: 10, ttlMs: 60_000 });
      ids.push(a.id);
    }
    for (const id of ids) {
      const own = globalKeys.holdsDue(id);
      expect(slotBlockOf(own)).toBe(slotBlockOf(accountKeys(id).account));
      expect(await r.zscore(own, dueMember(id, 'req_live'))).not.toBeNull();
      for (const other of globalKeys.holdsDueAll().filter((k) => k !== own))
        expect(await r.zscore(other, dueMember(id, 'req_live'))).toBeNull();
    }
    // A hold an older release filed in the one index it had (as an upgrade leaves them): the ledger
    // check finds it there, and the sweeper voids it when its owner is gone.
    const [id] = ids;
    await metering.reserve({ accountId: id!, holdId: 'req_old', min: 20, max: 20, ttlMs: 100 });
    const before = globalKeys.holdsDueAll().at(-1)!;
    expect(before).toBe('mp:holds:due');
    const score = await r.zscore(globalKeys.holdsDue(id!), dueMember(id!, 'req_old'));
    await r.zrem(globalKeys.holdsDue(id!), dueMember(id!, 'req_old'));
    await r.zadd(before, score!, dueMember(id!, 'req_old'));
    expect((await checkAccountLedger(r, id!, { toleranceMs: 60_000 })).problems).toEqual([]);
    await sleep(250);
    expect((await sweepDueHolds(r)).map((v) => `${v.accountId} ${v.holdId}`)).toEqual([`${id} req_old`]);
    expect(await r.zcard(before)).toBe(0);
    for (const a of ids) expect((await checkAccountLedger(r, a, { toleranceMs: 0 })).problems).toEqual([]);
  });

  it('an index that cannot be read does not stop the others: their holds are voided, and the failure is named', async () => {
    const r = redis.client();
    await r.flushdb();
    const metering = new Metering(r);
    const accounts = new Accounts(r);
    const ids: string[] = [];
    // Accounts in at least two blocks, so one index can fail while another holds a due hold.
    while (new Set(ids.map((id) => globalKeys.holdsDue(id))).size < 2) {
      const a = await accounts.create({ name: `c${ids.length}`, country: 'US' });
      await metering.topUp({ accountId: a.id, topUpId: 't', amount: 1_000 });
      await metering.reserve({ accountId: a.id, holdId: 'req_dead', min: 30, max: 30, ttlMs: 100 });
      ids.push(a.id);
    }
    const broken = globalKeys.holdsDue(ids[0]!);
    const members = await r.zrange(broken, 0, -1, 'WITHSCORES');
    await r.del(broken);
    await r.set(broken, 'not an index'); // every command on it now fails (WRONGTYPE), as a dead primary's would
    await sleep(250);
    const err = await sweepDueHolds(r).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SweepError);
    expect(String((err as SweepError).message)).toMatch(
      /1 hold expiry index\(es\) could not be swept: .*WRONGTYPE/,
    );
    const voided = (err as SweepError).voided.map((v) => v.accountId).sort();
    expect(voided).toEqual(ids.filter((id) => globalKeys.holdsDue(id) !== broken).sort());
    // The index back: the rest are voided on the next pass, nothing twice.
    await r.del(broken);
    await r.zadd(broken, ...members.flatMap((m, i) => (i % 2 === 0 ? [members[i + 1]!, m] : [])));
    const rest = (await sweepDueHolds(r)).map((v) => v.accountId).sort();
    expect(rest).toEqual(ids.filter((id) => globalKeys.holdsDue(id) === broken).sort());
    for (const id of ids) {
      expect(await metering.balance(id)).toEqual({ balance: 1_000, held: 0, available: 1_000 });
      expect((await checkAccountLedger(r, id, { toleranceMs: 0 })).problems).toEqual([]);
    }
  });

  it('one replica sweeps at a time; when it stops, another takes over and voids a dead owner’s hold', async () => {
    const r = redis.client();
    await r.flushdb();
    const metering = new Metering(r);
    const a = await new Accounts(r).create({ name: 'fleet', country: 'US' });
    await metering.topUp({ accountId: a.id, topUpId: 't', amount: 500 });
    const seen: string[] = [];
    const sweeper = (name: string) =>
      startHoldSweeper(redis.client(), {
        intervalMs: 20,
        lockTtlMs: 200,
        onVoided: (v) => seen.push(...v.map((x) => `${name}:${x.holdId}`)),
        onError: (err) => {
          throw err;
        },
      });
    const stopFirst = sweeper('first');
    // The first takes the lock before the second starts.
    await until(
      async () => (await r.get(globalKeys.sweeperLock)) !== null,
      'the first took the lock',
      10_000,
    );
    const stopSecond = sweeper('second');
    const holder = await r.get(globalKeys.sweeperLock);
    expect(holder).not.toBeNull();
    await metering.reserve({ accountId: a.id, holdId: 'req_one', min: 500, max: 500, ttlMs: 100 });
    await until(() => seen.length === 1, 'the hold was voided');
    expect(seen).toEqual(['first:req_one']); // the lock holder did it
    await stopFirst(); // gives the lock up at once
    await metering.reserve({ accountId: a.id, holdId: 'req_two', min: 500, max: 500, ttlMs: 100 });
    await until(() => seen.length === 2, 'the second hold was voided');
    expect(seen[1]).toBe('second:req_two');
    await stopSecond();
    expect(await r.get(globalKeys.sweeperLock)).toBeNull();
    expect((await metering.balance(a.id)).available).toBe(500);
  });

  it('a hold its expiry index lost (a failover) is filed again by the leader’s resync, then voided when its owner is gone', async () => {
    const r = redis.client();
    await r.flushdb();
    const metering = new Metering(r);
    const leases = new LeaseMetering(r);
    const a = await new Accounts(r).create({ name: 'lost', country: 'US' });
    const b = await new Accounts(r).create({ name: 'kept', country: 'US' });
    for (const id of [a.id, b.id]) await metering.topUp({ accountId: id, topUpId: 't', amount: 10_000 });
    await leases.extendLease({ accountId: a.id, leaseId: 'lease_lost', add: 1_000, den: 2, ttlMs: 400 });
    await metering.reserve({ accountId: a.id, holdId: 'req_kept', min: 100, max: 100, ttlMs: 60_000 });
    await metering.reserve({ accountId: b.id, holdId: 'req_kept', min: 100, max: 100, ttlMs: 60_000 });
    // What a failover can do: the index's entry gone (its write never replicated), the lease kept.
    const lost = dueMember(a.id, 'lease_lost');
    await Promise.all(globalKeys.holdsDueAll().map((k) => r.zrem(k, lost)));
    expect((await checkAccountLedger(r, a.id, { toleranceMs: 5_000 })).problems).toEqual([
      "hold lease_lost is missing from the sweeper's index",
    ]);
    // Without the resync nothing would ever void it: the sweeper finds nothing due.
    await sleep(500);
    expect(await sweepDueHolds(r)).toEqual([]);
    expect((await metering.balance(a.id)).held).toBe(1_100);

    const refiled: string[] = [];
    const voided: string[] = [];
    const stop = startHoldSweeper(redis.client(), {
      intervalMs: 20,
      lockTtlMs: 1_000,
      resyncMs: 60_000,
      onRefiled: (x) => refiled.push(...x.map((h) => `${h.accountId} ${h.holdId}`)),
      onVoided: (x) => voided.push(...x.map((h) => `${h.accountId} ${h.holdId} ${h.reason}`)),
      onError: (err) => {
        throw err;
      },
    });
    await until(() => voided.length === 1, 'the lost lease was voided');
    await stop();
    // Only the lost one was filed again; the others were in their index already.
    expect(refiled).toEqual([`${a.id} lease_lost`]);
    expect(voided).toEqual([`${a.id} lease_lost lease_expired`]);
    expect(await metering.balance(a.id)).toEqual({ balance: 10_000, held: 100, available: 9_900 });
    for (const id of [a.id, b.id])
      expect((await checkAccountLedger(r, id, { toleranceMs: 5_000 })).problems).toEqual([]);
    expect(await resyncHoldIndexes(r)).toEqual([]);
  });
});
