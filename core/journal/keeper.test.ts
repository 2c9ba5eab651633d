// The journal keeper under sustained load, on a real Redis and PostgreSQL: calls settle on several
// accounts without pause while the leader archives; every stream stays short the whole time, the
// journal ends with every record, and the ledger check (Redis against the journal) is clean. Two
// keepers run, as two proxy replicas would: one leads, and when it stops the other takes over.
import { beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerClean } from '../../test/helpers/ledger.ts';
import { journalForFile } from '../../test/helpers/postgres.ts';
import { redisForFile } from '../../test/helpers/redis-per-file.ts';
import { Accounts } from '../accounts/accounts.ts';
import { Metering } from '../billing/index.ts';
import { newId } from '../ids.ts';
import { accountKeys } from '../redis/keyspace.ts';
import type { Journal } from './journal.ts';
import { startJournalKeeper } from './keeper.ts';

const r = redisForFile();
const j = journalForFile();
let journal: Journal;
beforeAll(() => {
  journal = j.journal;
});

const ACCOUNTS = 4;
// Long enough that the archiver's lag on a starved machine (one slow pass: hundreds of entries) is a
// small part of what goes through each stream, so the bound below tells "bounded" from "growing".
const CALLS_PER_ACCOUNT = 5_000;
const WORKERS_PER_ACCOUNT = 4;

async function eventually(what: string, check: () => Promise<boolean>, deadlineMs = 60_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`never happened: ${what}`);
    await new Promise((res) => setTimeout(res, 20));
  }
}

describe('the journal keeper', () => {
  it('BILL-5 keeps every stream bounded under sustained load while the journal gets every record', async () => {
    const metering = new Metering(r.redis, { beforeTopUp: (t) => journal.commitTopUp(t) });
    const accounts: string[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      const { id } = await new Accounts(r.redis).create({ name: `Load ${i}`, country: 'US' });
      await metering.topUp({ accountId: id, topUpId: newId('topup'), amount: 1e12 });
      accounts.push(id);
    }
    const opts = {
      archiveIntervalMs: 20,
      reconcileIntervalMs: 1_000,
      reconcileWindowMs: 3_600_000,
      lockTtlMs: 1_000,
    };
    const a = startJournalKeeper(r.redis, journal, opts);
    const b = startJournalKeeper(r.redis, journal, opts);
    let longest = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        for (const id of accounts) longest = Math.max(longest, await r.redis.xlen(accountKeys(id).usage));
        await new Promise((res) => setTimeout(res, 5));
      }
    })();
    let handedOver = false;
    const work = accounts.flatMap((accountId) =>
      Array.from({ length: WORKERS_PER_ACCOUNT }, async (_, w) => {
        for (let i = 0; i < CALLS_PER_ACCOUNT / WORKERS_PER_ACCOUNT; i++) {
          const holdId = newId('req');
          await metering.reserve({ accountId, holdId, min: 1, max: 1_000, ttlMs: 60_000 });
          await metering.settle({
            accountId,
            holdId,
            cost: 1 + ((i * 7 + w) % 900),
            usage: {
              keyId: `key_${w}`,
              model: 'Org/Chat-1',
              kind: 'chat',
              inputTokens: i,
              outputTokens: 3,
              requestId: holdId,
            },
          });
          // Half-way, the leader steps down (a replica shutting down): the other keeps archiving.
          if (!handedOver && i === Math.floor(CALLS_PER_ACCOUNT / WORKERS_PER_ACCOUNT / 2)) {
            handedOver = true;
            const leader = a.status.leader ? a : b;
            await leader.stop();
          }
        }
      }),
    );
    await Promise.all(work);
    const total = ACCOUNTS * (CALLS_PER_ACCOUNT + 1);
    const count = async () =>
      Number((await journal.pool.query('select count(*) as n from transfers')).rows[0].n);
    await eventually('the journal holds every record', async () => (await count()) === total);
    await eventually('every stream is trimmed to what is not archived', async () => {
      for (const id of accounts) if ((await r.redis.xlen(accountKeys(id).usage)) > 0) return false;
      return true;
    });
    sampling = false;
    await sampler;
    await a.stop();
    await b.stop();
    expect(handedOver).toBe(true);
    // Bounded: at no moment did any stream hold more than part of what went through it (without the
    // archiver each would end at all of it); the machine is shared, so the bound is generous.
    expect(longest).toBeLessThan(CALLS_PER_ACCOUNT * 0.6);
    const books = await journal.bookTotals();
    expect(books.debits).toBe(books.credits);
    await expectLedgerClean(r.redis, accounts, 5_000, journal);
    console.log(`longest stream seen: ${longest} entries of ${CALLS_PER_ACCOUNT} per account`);
  });
});
