// Chaos: a Redis failover that loses acknowledged money. A primary with a replica; the replica
// stops taking the stream (SIGSTOP: replication is asynchronous, so the primary keeps answering);
// a top-up is committed in the journal and credited on the primary, and a batch of calls is
// settled there and archived; the primary dies and the lagging replica is promoted. What survives
// is self-consistent — the Redis-only check of the old days passes — but the journal remembers:
// `ledger check` names the lost top-up and each lost settlement, the reconciler credits the top-up
// again by itself, and once the proxies' outboxes resend the settlements (as they do, by their
// ids) the check is clean again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Accounts } from '../../core/accounts/accounts.ts';
import { Metering } from '../../core/billing/index.ts';
import type { UsageRecord } from '../../core/billing/script-args.ts';
import { newId } from '../../core/ids.ts';
import { Archiver, type Journal, reconcileTopUps } from '../../core/journal/index.ts';
import { checkAccountLedger } from '../../core/ledger/ledger.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { journalForFile } from '../helpers/postgres.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';

const j = journalForFile();
let journal: Journal;
let primary: TestRedis;
let replica: TestRedis;

beforeAll(async () => {
  journal = j.journal;
  primary = await startRedis({ aof: true });
  replica = await startRedis({ replicaOf: { port: primary.port } });
});
afterAll(async () => {
  await replica?.stop();
  await primary?.stop();
});

const usage = (requestId: string): UsageRecord => ({
  keyId: 'key_1',
  model: 'Org/Chat-1',
  kind: 'chat',
  inputTokens: 10,
  outputTokens: 5,
  requestId,
});

describe('a failover that loses a top-up and a settle batch', () => {
  it('BILL-5 ledger check names what was lost, the reconciler restores the top-up, resent settlements close it', async () => {
    const p = primary.client();
    const journalFirst = {
      beforeTopUp: (t: Parameters<Journal['commitTopUp']>[0]) => journal.commitTopUp(t),
    };
    const onPrimary = new Metering(p, journalFirst);
    const { id: accountId } = await new Accounts(p).create({ name: 'Failover', country: 'US' });
    await onPrimary.topUp({ accountId, topUpId: 'first', amount: 10_000 });
    const settle = async (m: Metering, holdId: string, cost: number) => {
      await m.reserve({ accountId, holdId, min: 1, max: 500, ttlMs: 60_000 });
      await m.settle({ accountId, holdId, cost, usage: usage(holdId) });
    };
    for (let i = 0; i < 3; i++) await settle(onPrimary, newId('req'), 100);
    await new Archiver(p, journal).round([accountId]);
    expect(await p.wait(1, 10_000)).toBe(1); // the replica has all of it

    // The replica falls behind: it stops, and the primary drops its link (a partition), so what the
    // primary acknowledges next never reaches it — replication is asynchronous.
    replica.pause();
    await p.client('KILL', 'TYPE', 'replica');
    const lostCalls = [newId('req'), newId('req')];
    for (const id of lostCalls) await settle(onPrimary, id, 400);
    await new Archiver(p, journal).round([accountId]); // the settlements are archived, then lost
    await onPrimary.topUp({ accountId, topUpId: 'lost-topup', amount: 2_500 }); // committed, then lost
    expect((await onPrimary.balance(accountId)).balance).toBe(10_000 - 300 + 2_500 - 800);
    await primary.kill();
    replica.resume();
    const r = replica.client();
    await r.replicaof('NO', 'ONE');

    // The promoted replica is self-consistent — the stream alone does not show the loss …
    const redisOnly = await checkAccountLedger(r, accountId, { toleranceMs: 60_000 });
    expect(redisOnly.balance).toBe(10_000 - 300);
    // … the journal does, naming each lost transfer and the difference.
    const named = (await checkAccountLedger(r, accountId, { toleranceMs: 60_000, journal })).problems;
    expect(named).toContainEqual(
      expect.stringContaining('top-up lost-topup (2500) is committed in the journal but not in Redis'),
    );
    for (const id of lostCalls)
      expect(named).toContainEqual(
        expect.stringMatching(new RegExp(`settle:${id} \\(charge 400\\) was archived .* Redis lost it`)),
      );
    expect(named).toContainEqual(expect.stringContaining('they differ by -1700'));

    // The reconciler credits the committed top-up again, under its id, once.
    const onReplica = new Metering(r);
    const restored = await reconcileTopUps(
      { redis: r, journal, metering: onReplica },
      { windowMs: 3_600_000 },
    );
    expect(restored).toEqual([{ accountId, topUpId: 'lost-topup', amount: 2_500 }]);
    expect(
      await reconcileTopUps({ redis: r, journal, metering: onReplica }, { windowMs: 3_600_000 }),
    ).toEqual([]);
    const afterReconcile = (await checkAccountLedger(r, accountId, { toleranceMs: 60_000, journal }))
      .problems;
    expect(afterReconcile.join('\n')).not.toContain('lost-topup');
    expect(afterReconcile).toContainEqual(expect.stringContaining('they differ by 800'));

    // The proxies' outboxes resend the settlements under their ids (the holds are gone: charged
    // from the balance); then Redis and the journal agree again, archived or not.
    for (const id of lostCalls)
      await onReplica.settle({ accountId, holdId: id, cost: 400, usage: usage(id) });
    await expectLedgerClean(r, [accountId], 60_000, journal);
    await new Archiver(r, journal).round([accountId]);
    await expectLedgerClean(r, [accountId], 60_000, journal);
    expect((await onReplica.balance(accountId)).balance).toBe(10_000 - 300 + 2_500 - 800);
  });
});
