// The console's billing with the durable journal (DATABASE_URL): an approved top-up is committed in
// the journal before Redis credits it, and the billing ledger reads the journal plus the entries not
// yet archived — the very same page before and after the archiver has trimmed the stream.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContext } from '../../cli/context.ts';
import { main } from '../../cli/main.ts';
import { Metering } from '../../core/billing/index.ts';
import { newId } from '../../core/ids.ts';
import { Archiver } from '../../core/journal/index.ts';
import { accountKeys } from '../../core/redis/keyspace.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { journalForFile } from '../helpers/postgres.ts';
import { type ConsoleHarness, startConsole } from './harness.ts';

const db = journalForFile();
let c: ConsoleHarness;
beforeAll(async () => {
  c = await startConsole({ CONSOLE_PAYMENT_PROVIDERS: 'approval' }, { journal: db.journal });
});
afterAll(async () => c?.stop());

/** `modelplane <argv> --json` against this console's Redis and the file's journal. */
async function cli(...argv: string[]): Promise<number> {
  const env = {
    REDIS_URL: c.config.REDIS_URL,
    MODELPLANE_KEK: c.config.MODELPLANE_KEK,
    DATABASE_URL: db.url,
  };
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return await main([...argv, '--json'], { out: () => {}, err: () => {} }, (j, o) => createContext(j, o));
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

describe('billing with the durable journal', () => {
  it('CON-12 an approved top-up is committed in the journal first; the ledger page is the same after archiving; usage call by call', async () => {
    const owner = await c.newOwner('jo');
    const s = await c.session(owner);
    const asked = await c.json<{ request: { id: string } }>(s, 'POST', '/billing/topups', {
      amount: '40',
      provider: 'approval',
    });
    expect(await cli('topups', 'approve', asked.request.id, '--by', 'ops@example.com')).toBe(0);
    const [committed] = await db.journal.records(owner.accountId, [`topup:${asked.request.id}`]);
    expect(committed).toMatchObject({ kind: 'topup', amount: 40_000_000_000 });

    // Some calls, one refunded, as the proxy and the video worker write them.
    const metering = new Metering(c.redis);
    const calls: string[] = [];
    for (let i = 0; i < 5; i++) {
      const holdId = newId('req');
      calls.push(holdId);
      await metering.reserve({ accountId: owner.accountId, holdId, min: 1, max: 1_000_000, ttlMs: 60_000 });
      await metering.settle({
        accountId: owner.accountId,
        holdId,
        cost: 250_000 * (i + 1),
        usage: {
          keyId: null,
          model: 'Org/Chat-1',
          kind: 'chat',
          inputTokens: 10,
          outputTokens: 5,
          requestId: holdId,
        },
      });
    }
    await metering.refund({
      accountId: owner.accountId,
      refundId: newId('refund'),
      of: `settle:${calls[0]}`,
      amount: 100_000,
      usage: { keyId: null, model: 'Org/Chat-1', kind: 'chat', requestId: calls[0] },
    });
    const before = await c.json<Record<string, unknown>>(s, 'GET', '/billing/ledger');
    expect(before).toMatchObject({ topUps: [expect.objectContaining({ source: 'approval' })] });

    await new Archiver(c.redis, db.journal).pass();
    expect(await c.redis.xlen(accountKeys(owner.accountId).usage)).toBe(0);
    const after = await c.json<Record<string, unknown>>(s, 'GET', '/billing/ledger');
    // The same entries (the default range ends now, so only its bounds moved).
    const { from: _f1, to: _t1, ...entriesBefore } = before;
    const { from: _f2, to: _t2, ...entriesAfter } = after;
    expect(entriesAfter).toEqual(entriesBefore);
    expect(entriesAfter).toMatchObject({ charges: [expect.objectContaining({ requests: 5 })] });
    // Inference API Usage call by call, from the journal: the five calls and the refund.
    const usage = await c.json<{ data: { requestId: string; type: string; amount: string }[] }>(
      s,
      'GET',
      '/usage/calls',
    );
    expect(
      usage.data
        .filter((x) => x.type === 'charge')
        .map((x) => x.requestId)
        .sort(),
    ).toEqual([...calls].sort());
    expect(usage.data).toContainEqual(
      expect.objectContaining({ type: 'refund', requestId: calls[0], amount: '0.0001' }),
    );
    await expectLedgerClean(c.redis, [owner.accountId], 5_000, db.journal);
  });
});
