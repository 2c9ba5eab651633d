// The journal on a real PostgreSQL and a real Redis: migrations from an empty database, top-ups
// committed first, the archiver exactly once across a crash between its commit and its
// acknowledgement, and the ledger check of Redis against the journal.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerClean } from '../../test/helpers/ledger.ts';
import { createTestDatabase, journalForFile } from '../../test/helpers/postgres.ts';
import { redisForFile } from '../../test/helpers/redis-per-file.ts';
import { Accounts } from '../accounts/accounts.ts';
import { Metering } from '../billing/index.ts';
import type { UsageRecord } from '../billing/script-args.ts';
import { newId } from '../ids.ts';
import { checkAccountLedger } from '../ledger/ledger.ts';
import { accountKeys } from '../redis/keyspace.ts';
import { ARCHIVER_GROUP, Archiver } from './archiver.ts';
import type { Journal } from './journal.ts';
import { migrate, migrationFiles } from './migrate.ts';

const r = redisForFile();
const j = journalForFile();
let journal: Journal;
beforeAll(() => {
  journal = j.journal;
});

const chat = (keyId: string, requestId: string): UsageRecord => ({
  keyId,
  model: 'Org/Chat-1',
  kind: 'chat',
  inputTokens: 100,
  cachedTokens: 40,
  outputTokens: 20,
  requestId,
});

/** An account with a journal-first top-up and some calls: settles, a short one, a refund, a void. */
async function busyAccount(calls: number): Promise<{ accountId: string; metering: Metering }> {
  const metering = new Metering(r.redis, { beforeTopUp: (t) => journal.commitTopUp(t) });
  const { id: accountId } = await new Accounts(r.redis).create({ name: 'Busy', country: 'US' });
  await metering.topUp({ accountId, topUpId: newId('topup'), amount: 1_000_000, note: 'test' });
  for (let i = 0; i < calls; i++) {
    const holdId = newId('req');
    await metering.reserve({ accountId, holdId, min: 10, max: 500, ttlMs: 60_000 });
    await metering.settle({ accountId, holdId, cost: 100 + i, usage: chat('key_a', holdId) });
  }
  const refundOf = newId('req');
  await metering.reserve({ accountId, holdId: refundOf, min: 10, max: 500, ttlMs: 60_000 });
  await metering.settle({ accountId, holdId: refundOf, cost: 300, usage: chat('key_b', refundOf) });
  await metering.refund({
    accountId,
    refundId: newId('refund'),
    of: `settle:${refundOf}`,
    amount: 120,
    usage: chat('key_b', refundOf),
  });
  return { accountId, metering };
}

describe('journal migrations', () => {
  it('apply to an empty database once, and refuse a database from a newer release', async () => {
    const fresh = await createTestDatabase();
    const pool = new pg.Pool({ connectionString: fresh.url });
    try {
      expect(await migrate(pool)).toEqual(migrationFiles().map((f) => f.version));
      expect(await migrate(pool)).toEqual([]);
      const tables = await pool.query<{ t: string }>(
        "select table_name as t from information_schema.tables where table_schema = 'public' order by 1",
      );
      // transfers and its partitions by month (the 002 migration; partitions.test.ts).
      expect(tables.rows.map((x) => x.t).filter((t) => !/^transfers_\d{4}_\d{2}$/.test(t))).toEqual([
        'postings',
        'schema_migrations',
        'transfers',
        'transfers_default',
      ]);
      await pool.query("insert into schema_migrations (version) values ('999_from_the_future')");
      await expect(migrate(pool)).rejects.toThrow(/999_from_the_future.*newer release/);
      // The one posting rule: every kind of transfer posts balanced legs, never a book against itself.
      const legs = await pool.query<{ k: string; debit: string; credit: string; amount: string }>(
        `select k, p.* from (values ('topup'), ('charge'), ('refund'), ('void')) v(k)
         cross join lateral journal_postings(k, 100, 30) p order by 1, 2, 3`,
      );
      expect(legs.rows.map((x) => `${x.k}: ${x.debit} -> ${x.credit} ${x.amount}`)).toEqual([
        'charge: customer_credit -> revenue 100',
        'charge: uncollected -> revenue 30',
        'refund: revenue -> customer_credit 100',
        'topup: payment_clearing -> customer_credit 100',
        'void: customer_credit -> pending_holds 100',
        'void: pending_holds -> customer_credit 100',
      ]);
      await expect(
        pool.query(
          "insert into transfers (account_id, id, kind, at_ms, amount, month) values ('a', 'x', 'gift', 1, 5, 0)",
        ),
      ).rejects.toThrow(/check constraint/);
      await expect(
        pool.query(
          "insert into transfers (account_id, id, kind, at_ms, amount, month) values ('a', 'y', 'topup', 1, -5, 0)",
        ),
      ).rejects.toThrow(/check constraint/);
    } finally {
      await pool.end();
    }
  });

  it('a migration that fails leaves nothing half-applied', async () => {
    const fresh = await createTestDatabase();
    const dir = mkdtempSync(join(tmpdir(), 'mp-mig-'));
    writeFileSync(join(dir, '001_ok.sql'), 'create table a (x int);');
    writeFileSync(join(dir, '002_bad.sql'), 'create table b (x int); select nonsense from nowhere;');
    const pool = new pg.Pool({ connectionString: fresh.url });
    try {
      await expect(migrate(pool, dir)).rejects.toThrow(/002_bad failed/);
      const v = await pool.query('select version from schema_migrations');
      expect(v.rows).toEqual([{ version: '001_ok' }]);
      expect((await pool.query("select to_regclass('b') as b")).rows[0].b).toBeNull();
    } finally {
      await pool.end();
    }
  });
});

describe('the archiver', () => {
  it('BILL-5 archives exactly once across a crash between the commit and the acknowledgement', async () => {
    const { accountId, metering } = await busyAccount(20);
    const stream = accountKeys(accountId).usage;
    const before = await r.redis.xlen(stream);
    expect(before).toBe(23); // top-up, 21 charges, a refund

    const crashing = new Archiver(r.redis, journal, {
      afterCommit: async () => {
        throw new Error('crashed after the commit');
      },
    });
    await expect(crashing.round([accountId])).rejects.toThrow(/crashed/);
    // Committed, not acknowledged: the journal has every entry, the stream still all of them.
    const count = async () =>
      Number(
        (await journal.pool.query('select count(*) as n from transfers where account_id = $1', [accountId]))
          .rows[0].n,
      );
    expect(await count()).toBe(23);
    expect(await r.redis.xlen(stream)).toBe(23);
    const pending = (await r.redis.xpending(stream, ARCHIVER_GROUP)) as [number, ...unknown[]];
    expect(pending[0]).toBe(23);

    // The next leader re-reads what was given and not acknowledged: nothing is inserted twice.
    const next = new Archiver(r.redis, journal);
    const pass = await next.round([accountId]);
    expect(pass).toMatchObject({ read: 23, archived: 0 });
    expect(await count()).toBe(23);
    expect(await r.redis.xlen(stream)).toBe(0);
    expect(((await r.redis.xpending(stream, ARCHIVER_GROUP)) as [number])[0]).toBe(0);
    const postings = await journal.pool.query('select count(*) as n from postings where account_id = $1', [
      accountId,
    ]);
    expect(Number(postings.rows[0].n)).toBe(23); // one posting each: nothing was short
    expect(await journal.creditBalance(accountId)).toBe(BigInt((await metering.balance(accountId)).balance));

    // More calls after the trim: the chain resumes at the first entry left, and the check holds.
    const holdId = newId('req');
    await metering.reserve({ accountId, holdId, min: 10, max: 500, ttlMs: 60_000 });
    await metering.settle({ accountId, holdId, cost: 77, usage: chat('key_a', holdId) });
    const ledger = await checkAccountLedger(r.redis, accountId, { toleranceMs: 5_000, journal });
    expect(ledger.problems).toEqual([]);
    await next.round([accountId]);
    expect(await count()).toBe(24);
    await expectLedgerClean(r.redis, [accountId], 5_000, journal);
  });

  it('a top-up committed first is archived once, with its stream id, and a retry commits nothing new', async () => {
    const metering = new Metering(r.redis, { beforeTopUp: (t) => journal.commitTopUp(t) });
    const { id: accountId } = await new Accounts(r.redis).create({ name: 'T', country: 'US' });
    const topUpId = newId('topup');
    await metering.topUp({ accountId, topUpId, amount: 5_000 });
    expect((await journal.unseenTopUps({ accountId })).map((t) => t.id)).toEqual([`topup:${topUpId}`]);
    expect(await metering.topUp({ accountId, topUpId, amount: 5_000 })).toEqual({
      balance: 5_000,
      duplicate: true,
    });
    await expect(journal.commitTopUp({ accountId, topUpId, amount: 6_000 })).rejects.toThrow(
      /another amount/,
    );
    await new Archiver(r.redis, journal).round([accountId]);
    expect(await journal.unseenTopUps({ accountId })).toEqual([]);
    const [t] = await journal.records(accountId, [`topup:${topUpId}`]);
    expect(t).toMatchObject({ kind: 'topup', amount: 5_000, balanceAfter: 5_000 });
    expect(t?.streamId).toMatch(/^\d+-\d+$/);
    const books = await journal.bookTotals(accountId);
    expect(books).toEqual({
      debits: 5_000n,
      credits: 5_000n,
      books: { payment_clearing: -5_000n, customer_credit: 5_000n },
    });
    await expectLedgerClean(r.redis, [accountId], 5_000, journal);
  });
});
