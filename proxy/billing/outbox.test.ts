// The settlement outbox on real Redis: a settlement is never given up (a Redis outage is outlasted,
// and stalledMs says for how long it has failed), a journal a dead process left is replayed exactly
// once (batches Redis applied but never acknowledged answer from their done key), and with replicas
// required a settlement counts only once WAIT confirms a replica has it — or, with none attached
// (a promoted primary), is answered and kept in the journal until one is.
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Accounts } from '../../core/accounts/accounts.ts';
import { LeaseMetering, Metering, type UsageRecord } from '../../core/billing/index.ts';
import { duplicateRedis, type Redis } from '../../core/redis/client.ts';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../../test/helpers/ledger.ts';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { free, mountTmpfs } from '../../test/helpers/tmpfs.ts';
import { until } from '../../test/helpers/until.ts';
import { Outbox } from './outbox.ts';
import { SettlementJournal } from './settlement-journal.ts';

const usage = (requestId: string): UsageRecord => ({
  keyId: 'k',
  model: 'M',
  kind: 'chat',
  inputTokens: 1,
  outputTokens: 1,
  requestId,
});
const dataDir = () => mkdtempSync(join(tmpdir(), 'mp-outbox-'));
const leased = (holdId: string, accountId: string) => ({
  accountId,
  leaseId: 'lease_full',
  holdId,
  cost: 1_000,
  carved: 2_000,
  usage: usage(holdId),
});

/** An outbox on its own connection, as Billing builds it (no offline queue, a command timeout). */
function outboxOn(redis: Redis, dir: string, o: { waitReplicas?: number } = {}) {
  const conn = duplicateRedis(redis, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 2_000,
  });
  conn.on('error', () => {});
  const { journal, replayed } = SettlementJournal.open(dir);
  const errors: unknown[] = [];
  const outbox = new Outbox({
    journal,
    redis: conn,
    waitReplicas: o.waitReplicas ?? 0,
    waitTimeoutMs: 200,
    onError: (err) => errors.push(err),
    maxBackoffMs: 100,
  });
  return {
    outbox,
    journal,
    replayed,
    errors,
    close() {
      outbox.close();
      journal.close();
      conn.disconnect();
    },
  };
}

describe('settlement outbox', () => {
  let server: TestRedis;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedis({ aof: true });
    redis = server.client();
  });
  afterAll(async () => server.stop());

  async function funded(amount: number) {
    const a = await new Accounts(redis).create({ name: 'outbox', country: 'US' });
    await new Metering(redis).topUp({ accountId: a.id, topUpId: 't', amount });
    return a.id;
  }

  it('BILL-5 a settlement made while Redis is down is never given up: it lands once Redis is back, exactly once', async () => {
    const accountId = await funded(10_000);
    const m = new Metering(redis);
    await m.reserve({ accountId, holdId: 'req_down', min: 100, max: 500, ttlMs: 60_000 });
    const o = outboxOn(redis, dataDir());
    await server.kill();
    const settled = o.outbox.settleHold({
      accountId,
      holdId: 'req_down',
      cost: 300,
      carved: 500,
      usage: usage('req_down'),
    });
    await until(() => o.outbox.stalledMs() > 0, 'the outbox saw its first failure');
    await new Promise((r) => setTimeout(r, 1_500)); // far past the 3 attempts the proxy once gave up after
    expect(o.outbox.stalledMs()).toBeGreaterThan(1_000);
    expect(o.outbox.pending).toBe(1);
    await server.restart();
    expect(await settled).toMatchObject({ charged: 300, duplicate: false });
    expect(o.outbox.stalledMs()).toBe(0);
    expect(o.journal.pendingRecords).toBe(0);
    o.close();
    expect(await m.balance(accountId)).toEqual({ balance: 9_700, held: 0, available: 9_700 });
    await expectLedgerClean(redis, [accountId]);
  });

  it('a journal left by a dead process is replayed exactly once, and its dead lease is given back', async () => {
    const accountId = await funded(100_000);
    const dir = dataDir();
    const leases = new LeaseMetering(redis);
    await leases.extendLease({ accountId, leaseId: 'lease_dead', add: 10_000, den: 2, ttlMs: 60_000 });
    await new Metering(redis).reserve({ accountId, holdId: 'req_own', min: 10, max: 1_000, ttlMs: 60_000 });
    // The process that dies: three leased calls and one on its own hold were delivered and journaled.
    const dead = outboxOn(redis, dir);
    const [a, b] = ['req_a', 'req_b', 'req_c'].map((h) =>
      dead.outbox.recordLeased({
        accountId,
        leaseId: 'lease_dead',
        holdId: h,
        cost: 1_000,
        carved: 2_000,
        usage: usage(h),
      }),
    );
    dead.journal.record({
      accountId,
      leaseId: null,
      holdId: 'req_own',
      cost: 700,
      carved: 1_000,
      usage: usage('req_own'),
    });
    // Its batch of a and b reached Redis, but the process died before it wrote the acknowledgement.
    dead.journal.batch({ accountId, leaseId: 'lease_dead', batchId: '1', seqs: [a!.seq, b!.seq] });
    await leases.settleBatch({
      accountId,
      leaseId: 'lease_dead',
      batchId: '1',
      ttlMs: 60_000,
      records: [a!, b!],
    });
    dead.outbox.close();
    dead.journal.close(); // as SIGKILL leaves it: c and req_own never sent, batch 1 unacknowledged

    const next = outboxOn(redis, dir);
    expect(next.replayed.pending.map((r) => r.holdId)).toEqual(['req_a', 'req_b', 'req_c', 'req_own']);
    await next.outbox.replay(next.replayed, {
      batchPrefix: 'replay-lease_next',
      ttlMs: 60_000,
      releaseLease: async (acct, leaseId) => {
        await leases.releaseLease({ accountId: acct, leaseId });
      },
    });
    expect(next.journal.pendingRecords).toBe(0);
    next.close();
    const charges = (await usageRecords(redis, accountId, { count: 20 })).filter((e) => e.type === 'charge');
    expect(charges.map((e) => [e.requestId, e.amount]).sort()).toEqual([
      ['req_a', 1_000],
      ['req_b', 1_000],
      ['req_c', 1_000],
      ['req_own', 700],
    ]);
    // The dead lease's rest went back at once, not after its ttl.
    expect(await new Metering(redis).balance(accountId)).toEqual({
      balance: 96_300,
      held: 0,
      available: 96_300,
    });
    await expectLedgerClean(redis, [accountId]);
    // A third start finds nothing left to send.
    const third = outboxOn(redis, dir);
    expect(third.replayed.pending).toEqual([]);
    third.close();
  });

  it('with replicas required and none attached (a promoted primary, issue 38), a settlement is answered at once and stays in the journal until a replica has it', async () => {
    const accountId = await funded(10_000);
    const m = new Metering(redis);
    await m.reserve({ accountId, holdId: 'req_wait', min: 10, max: 500, ttlMs: 60_000 });
    const o = outboxOn(redis, dataDir(), { waitReplicas: 1 });
    // Redis applied it and the caller has its answer; with no replica to wait for, the shard is
    // named short of replicas, nothing stalls, and the journal keeps the settlement.
    expect(
      await o.outbox.settleHold({
        accountId,
        holdId: 'req_wait',
        cost: 250,
        carved: 500,
        usage: usage('req_wait'),
      }),
    ).toMatchObject({ charged: 250 });
    expect(await m.balance(accountId)).toMatchObject({ balance: 9_750, held: 0 });
    expect(o.outbox.stalledMs()).toBe(0);
    expect(o.outbox.replicas.shortShards()).toEqual([
      { shard: expect.any(String), since: expect.any(Number), held: 1 },
    ]);
    expect(o.journal.pendingRecords).toBe(1);
    // A second one while short: no WAIT is waited out for it.
    await m.reserve({ accountId, holdId: 'req_wait2', min: 10, max: 500, ttlMs: 60_000 });
    await o.outbox.settleHold({
      accountId,
      holdId: 'req_wait2',
      cost: 50,
      carved: 500,
      usage: usage('req_wait2'),
    });
    expect(o.journal.pendingRecords).toBe(2);
    const replica = await startRedis({ replicaOf: { port: server.port } });
    try {
      // Once a replica is attached, one WAIT covers both: they leave the journal together.
      await until(() => o.journal.pendingRecords === 0, 'the held settlements left the journal', 30_000);
      expect(o.outbox.replicas.shortShards()).toEqual([]);
      const copy = replica.client();
      expect(await copy.hget(`{a:${accountId}}:account`, 'balance')).toBe('9700');
    } finally {
      o.close();
      await replica.stop();
    }
    await expectLedgerClean(redis, [accountId]);
  });

  it('with replicas required and one attached but lagging (stopped), a settlement counts only once WAIT confirms it', async () => {
    const replica = await startRedis({ replicaOf: { port: server.port } });
    const accountId = await funded(10_000);
    const m = new Metering(redis);
    await m.reserve({ accountId, holdId: 'req_lag', min: 10, max: 500, ttlMs: 60_000 });
    await until(
      async () => /connected_slaves:1/.test(await redis.info('replication')),
      'the replica attached',
    );
    const o = outboxOn(redis, dataDir(), { waitReplicas: 1 });
    replica.pause();
    let done = false;
    const settled = o.outbox.settleHold({
      accountId,
      holdId: 'req_lag',
      cost: 250,
      carved: 500,
      usage: usage('req_lag'),
    });
    void settled.then(() => {
      done = true;
    });
    try {
      // Redis applied it (exactly once: the resends answer from the done key), but the replica that
      // is there does not have it: the outbox keeps it pending, resends it, and counts the stall.
      await until(() => o.outbox.stalledMs() > 300, 'the outbox kept failing');
      expect(await m.balance(accountId)).toMatchObject({ balance: 9_750, held: 0 });
      expect(done).toBe(false);
      expect(o.outbox.replicas.shortShards()).toEqual([]);
      expect(o.journal.pendingRecords).toBe(1);
      replica.resume();
      expect(await settled).toMatchObject({ charged: 250 });
      expect(o.journal.pendingRecords).toBe(0);
    } finally {
      replica.resume();
      o.close();
      await replica.stop();
    }
    await expectLedgerClean(redis, [accountId]);
  });

  describe('on a full journal disk (a real tmpfs)', () => {
    const disk = mountTmpfs(64 * 1024);
    const onDisk = disk === null ? it.skip : it;
    afterAll(() => disk?.unmount());

    onDisk(
      'BILL-5 full disk, then a crash (issue 47): a batch whose records reached the file only in part is sent at once, per record; the calls are answered once Redis has their charges; the restart charges each exactly once',
      async () => {
        const accountId = await funded(1_000_000);
        const leases = new LeaseMetering(redis);
        await leases.extendLease({ accountId, leaseId: 'lease_full', add: 100_000, den: 2, ttlMs: 60_000 });
        const dir = mkdtempSync(join(disk!.dir, 'o-'));
        const o = outboxOn(redis, dir);
        // A first line puts the segment mid-page: once the disk is full, a write fills that page and
        // no more, so the next lines land in part — some whole, one torn, the rest not at all.
        const warm = o.journal.record(leased('req_warm', accountId));
        o.journal.ack([warm.seq]);
        await new Promise<void>((r) => o.journal.afterWrite(r));
        const filler = disk!.fill();
        const records = Array.from({ length: 40 }, (_, i) =>
          o.outbox.recordLeased(leased(`req_f${i}`, accountId)),
        );
        let answered = false;
        o.journal.afterWrite(() => {
          answered = true;
        });
        await until(() => o.journal.writeFailure !== null, 'the disk refusing the lines');
        const onDiskNow = readFileSync(join(dir, readdirSync(dir).find((f) => f.endsWith('.log'))!), 'utf8');
        // Whole lines only: what follows the last newline is the torn one.
        const whole = onDiskNow.slice(0, onDiskNow.lastIndexOf('\n') + 1);
        const landed = whole.split('\n').filter((l) => l.includes('"holdId":"req_f')).length;
        expect(landed, 'some record lines reached the file').toBeGreaterThan(0);
        expect(landed, 'and not all of them').toBeLessThan(records.length);
        await new Promise((r) => setTimeout(r, 300));
        // Their charges exist only in this process: the calls are not answered yet.
        expect(answered).toBe(false);
        const sent = o.outbox.settleBatch({
          accountId,
          leaseId: 'lease_full',
          batchId: '1',
          ttlMs: 60_000,
          records,
        });
        const waited = await Promise.race([
          sent.then(() => 'sent'),
          new Promise((r) => setTimeout(() => r('still waiting for the disk'), 3_000)),
        ]);
        expect(waited).toBe('sent');
        await until(() => answered, 'the calls answered once Redis has their charges');
        // SIGKILL: the file stays as it is (neither the batch line nor the acknowledgement reached
        // it); a clean close would drop the acknowledged segment, so it is put back as it was.
        const segment = join(dir, readdirSync(dir).find((f) => f.endsWith('.log'))!);
        const atKill = readFileSync(segment);
        expect(atKill.toString()).toBe(onDiskNow);
        o.close();
        free(filler);
        writeFileSync(segment, atKill);
        const next = outboxOn(redis, dir);
        const replayedHolds = next.replayed.pending.map((r) => r.holdId);
        expect(replayedHolds).toHaveLength(landed);
        expect(next.replayed.batches).toEqual([]);
        await next.outbox.replay(next.replayed, {
          batchPrefix: 'replay-full',
          ttlMs: 60_000,
          releaseLease: async () => {},
        });
        next.close();
        const charges = (await usageRecords(redis, accountId, { count: 100 })).filter(
          (e) => e.type === 'charge',
        );
        expect(charges.map((e) => e.requestId).sort()).toEqual(records.map((r) => r.holdId).sort());
        expect(charges.every((e) => e.amount === 1_000)).toBe(true);
        await leases.releaseLease({ accountId, leaseId: 'lease_full' });
        await expectLedgerClean(redis, [accountId]);
      },
      30_000,
    );
  });
});
