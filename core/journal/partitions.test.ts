// `transfers` by month (the 002 migration) on a real PostgreSQL and a real Redis: a 001 journal
// with rows converted in place, each row in its month's partition; months made ahead of time by
// the keeper, rows that came before their month's partition moved into it; and a transfer that
// arrives twice with times in two months (a top-up committed here then archived from Redis, a
// resend after a failover) is still one row.
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerClean } from '../../test/helpers/ledger.ts';
import { createTestDatabase, journalForFile } from '../../test/helpers/postgres.ts';
import { redisForFile } from '../../test/helpers/redis-per-file.ts';
import { Accounts } from '../accounts/accounts.ts';
import { Metering } from '../billing/index.ts';
import { newId } from '../ids.ts';
import type { UsageEntry } from '../usage/usage.ts';
import { Archiver } from './archiver.ts';
import { Journal } from './journal.ts';
import { startJournalKeeper } from './keeper.ts';
import { migrate, migrationFiles } from './migrate.ts';

const r = redisForFile();
const j = journalForFile();
let journal: Journal;
beforeAll(() => {
  journal = j.journal;
});

const MIGRATIONS = join(import.meta.dirname, 'migrations');
const utc = (s: string) => Date.parse(`${s}Z`);
/** The partition a transfer's row is in. */
const partitionOf = async (p: pg.Pool | Journal['pool'], accountId: string, id: string) =>
  (
    await p.query<{ t: string }>(
      'select tableoid::regclass::text as t from transfers where account_id = $1 and id = $2',
      [accountId, id],
    )
  ).rows.map((x) => x.t);

/** A charge as the usage stream carries it, filed at `atMs`. */
function charge(opId: string, atMs: number, seq = 0): UsageEntry {
  return {
    id: `${atMs}-${seq}`,
    atMs,
    type: 'charge',
    opId,
    amount: 700,
    cost: 700,
    short: 0,
    held: 1_000,
    source: 'hold',
    reason: null,
    leaseId: null,
    refundOf: null,
    balance: 9_300,
    keyId: 'key_a',
    model: 'Org/Chat-1',
    kind: 'chat',
    inputTokens: 10,
    cachedTokens: 0,
    outputTokens: 5,
    images: null,
    videoSeconds: null,
    requestId: opId.replace(/^settle:/, ''),
    note: null,
  };
}

describe('the journal by month', () => {
  it('the 002 migration converts a 001 journal with rows: each row kept, in its month, postings unchanged', async () => {
    const db = await createTestDatabase();
    const pool = new pg.Pool({ connectionString: db.url });
    try {
      // A journal as release 001 left it.
      const only001 = mkdtempSync(join(tmpdir(), 'mp-mig-001-'));
      const [first] = migrationFiles();
      expect(first?.version).toBe('001_journal');
      copyFileSync(join(MIGRATIONS, '001_journal.sql'), join(only001, '001_journal.sql'));
      expect(await migrate(pool, only001)).toEqual(['001_journal']);
      const rows: [string, string, string, number, number, number | null][] = [
        ['acct_a', 'topup:t1', 'topup', utc('2024-02-29T23:59:59.999'), 10_000, null],
        ['acct_a', 'settle:h1', 'charge', utc('2024-03-01T00:00:00'), 700, 1],
        ['acct_b', 'settle:h2', 'charge', utc('2025-12-31T12:00:00'), 300, 2],
        ['acct_b', 'void:h3', 'void', utc('2025-12-31T13:00:00'), 50, 3],
      ];
      for (const [a, id, kind, at, amount, sms] of rows)
        await pool.query(
          `insert into transfers (account_id, id, kind, at_ms, amount, stream_ms, stream_seq)
           values ($1, $2, $3, $4, $5, $6, $7)`,
          [a, id, kind, at, amount, sms, sms === null ? null : 0],
        );
      const postingsBefore = (await pool.query('select * from postings order by 1, 2, 3, 4')).rows;

      expect(await migrate(pool)).toEqual(['002_transfers_by_month']);
      expect(await partitionOf(pool, 'acct_a', 'topup:t1')).toEqual(['transfers_2024_02']);
      expect(await partitionOf(pool, 'acct_a', 'settle:h1')).toEqual(['transfers_2024_03']);
      expect(await partitionOf(pool, 'acct_b', 'settle:h2')).toEqual(['transfers_2025_12']);
      expect(await partitionOf(pool, 'acct_b', 'void:h3')).toEqual(['transfers_2025_12']);
      expect((await pool.query('select * from postings order by 1, 2, 3, 4')).rows).toEqual(postingsBefore);
      expect((await pool.query('select count(*)::int as n from transfers_default')).rows[0].n).toBe(0);
      // This month and the next two exist from the start.
      const now = new Date();
      const month = (k: number) => {
        const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + k, 1));
        return `transfers_${d.getUTCFullYear()}_${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
      };
      const parts = await pool.query<{ t: string }>(
        "select c.relname as t from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'transfers'::regclass",
      );
      expect(parts.rows.map((x) => x.t)).toEqual(expect.arrayContaining([month(0), month(1), month(2)]));
      // The converted journal takes new rows by the same rules: the key and the month's check.
      const j2 = await Journal.open(db.url);
      try {
        expect(
          await j2.archive([
            { accountId: 'acct_a', entry: charge('settle:h1', utc('2024-03-01T00:00:00'), 1) },
          ]),
        ).toBe(0);
        expect((await j2.commitTopUp({ accountId: 'acct_a', topUpId: 't1', amount: 10_000 })).duplicate).toBe(
          true,
        );
        await expect(
          pool.query(
            "insert into transfers (account_id, id, kind, at_ms, amount, month) values ('a', 'z', 'charge', 1, 5, 7)",
          ),
        ).rejects.toThrow(/check constraint/);
      } finally {
        await j2.close();
      }
    } finally {
      await pool.end();
      await db.stop?.();
    }
  });

  it('the keeper makes the months ahead; rows that came before their partition are moved into it', async () => {
    // A month with no partition yet: its rows wait in the default partition.
    const far = utc('2031-07-15T10:00:00');
    expect(await journal.archive([{ accountId: 'acct_far', entry: charge('settle:far', far) }])).toBe(1);
    expect(await partitionOf(journal.pool, 'acct_far', 'settle:far')).toEqual(['transfers_default']);

    // The keeper, its clock a month before: it makes June, July and August 2031.
    const made: string[] = [];
    const keeper = startJournalKeeper(r.redis, journal, {
      archiveIntervalMs: 20,
      reconcileIntervalMs: 50,
      reconcileWindowMs: 3_600_000,
      lockTtlMs: 2_000,
      now: () => utc('2031-06-20T00:00:00'),
      onPartitions: (names) => made.push(...names),
    });
    try {
      const until = Date.now() + 60_000;
      while (made.length < 3 && Date.now() < until) await new Promise((res) => setTimeout(res, 20));
    } finally {
      await keeper.stop();
    }
    expect(made.sort()).toEqual(['transfers_2031_06', 'transfers_2031_07', 'transfers_2031_08']);
    expect(await partitionOf(journal.pool, 'acct_far', 'settle:far')).toEqual(['transfers_2031_07']);
    // Two parts making the same months at once: each month made once, neither fails.
    const both = await Promise.all([
      journal.ensurePartitions(utc('2032-01-10T00:00:00')),
      journal.ensurePartitions(utc('2032-01-10T00:00:00')),
    ]);
    expect(both.flat().sort()).toEqual(['transfers_2032_01', 'transfers_2032_02', 'transfers_2032_03']);
    // Made once: a second pass, or another part opening the journal, makes nothing.
    expect(await journal.ensurePartitions(utc('2031-06-20T00:00:00'))).toEqual([]);
    // The row is still found by its key and not inserted again.
    expect(await journal.archive([{ accountId: 'acct_far', entry: charge('settle:far', far, 1) }])).toBe(0);
    expect((await journal.records('acct_far', ['settle:far'])).map((x) => x.amount)).toEqual([700]);
  });

  it('BILL-5 one transfer arriving in two months is one row: a resend after a failover, a top-up committed first', async () => {
    // A settlement archived on the last millisecond of January; Redis loses it in a failover, the
    // outbox's resend files it again in February (and a clock a little behind, in January again).
    const accountId = `acct_${newId('x')}`;
    expect(await journal.ensurePartitions(utc('2030-01-10T00:00:00'), 5)).toHaveLength(6);
    const jan = utc('2030-01-31T23:59:59.999');
    expect(await journal.archive([{ accountId, entry: charge('settle:h9', jan) }])).toBe(1);
    expect(
      await journal.archive([{ accountId, entry: charge('settle:h9', utc('2030-02-01T00:00:00.400')) }]),
    ).toBe(0);
    expect(
      await journal.archive([{ accountId, entry: charge('settle:h9', utc('2030-01-31T23:59:58')) }]),
    ).toBe(0);
    // A charge (Metering.charge: Redis applies it once for 35 days) resent 34 days later, in March.
    expect(await journal.archive([{ accountId, entry: charge('charge:c9', jan) }])).toBe(1);
    expect(
      await journal.archive([{ accountId, entry: charge('charge:c9', utc('2030-03-06T00:00:00')) }]),
    ).toBe(0);
    expect((await journal.records(accountId, ['charge:c9'])).length).toBe(1);
    expect((await journal.records(accountId, ['settle:h9'])).length).toBe(1);

    // A top-up committed here at the end of a month and credited in Redis in the next: one row,
    // now with its stream id, in the month it was committed.
    const metering = new Metering(r.redis, {
      beforeTopUp: (t) => journal.commitTopUp({ ...t, atMs: utc('2030-04-30T23:59:59.990') }),
    });
    const { id: acct } = await new Accounts(r.redis).create({ name: 'Month end', country: 'US' });
    const topUpId = newId('topup');
    await metering.topUp({ accountId: acct, topUpId, amount: 5_000 });
    await new Archiver(r.redis, journal).round([acct]);
    const [t] = await journal.records(acct, [`topup:${topUpId}`]);
    expect(t).toMatchObject({ kind: 'topup', amount: 5_000, balanceAfter: 5_000 });
    expect(t?.streamId).toMatch(/^\d+-\d+$/);
    expect(await partitionOf(journal.pool, acct, `topup:${topUpId}`)).toEqual(['transfers_2030_04']);
    // A retried commit months later finds it too.
    expect(
      (
        await journal.commitTopUp({
          accountId: acct,
          topUpId,
          amount: 5_000,
          atMs: utc('2030-06-02T00:00:00'),
        })
      ).duplicate,
    ).toBe(true);
    expect((await journal.records(acct, [`topup:${topUpId}`])).length).toBe(1);
    await expectLedgerClean(r.redis, [acct], 5_000, journal);

    // The same top-up committed twice at once, the two commits' clocks in two months: one row.
    const raced = newId('topup');
    const commits = await Promise.all(
      [utc('2030-05-31T23:59:59.999'), utc('2030-06-01T00:00:00.001')].map((atMs) =>
        journal.commitTopUp({ accountId: acct, topUpId: raced, amount: 9, atMs }),
      ),
    );
    expect(commits.map((c) => c.duplicate).sort()).toEqual([false, true]);
    expect((await journal.records(acct, [`topup:${raced}`])).length).toBe(1);
  });
});
