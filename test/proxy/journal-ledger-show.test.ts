// `modelplane ledger show` a year later: calls made through the real proxy with a key that was then
// rotated, with a key that was then deleted, and a call that was refunded — archived into the
// PostgreSQL journal and trimmed from Redis — are still shown whole, from the journal: key, model,
// tokens, cost and the amount charged, and the refund. The money test ends with the ledger check of
// Redis against the journal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContext } from '../../cli/context.ts';
import { main } from '../../cli/main.ts';
import { newId } from '../../core/ids.ts';
import { Archiver, type Journal } from '../../core/journal/index.ts';
import { accountKeys } from '../../core/redis/keyspace.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { journalForFile } from '../helpers/postgres.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

const db = journalForFile();
let h: Harness;
let journal: Journal;

beforeAll(async () => {
  h = await startHarness();
  journal = db.journal;
});
afterAll(async () => {
  await h?.stop();
});

async function call(secret: string): Promise<string> {
  const { response } = await h
    .client(secret)
    .chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'kept forever' }],
      max_tokens: 5,
    })
    .withResponse();
  return response.headers.get('x-request-id')!;
}

async function cli(...argv: string[]): Promise<unknown> {
  const out: string[] = [];
  const err: string[] = [];
  const env = { REDIS_URL: h.redis.url, MODELPLANE_KEK: h.config.kek.toString('hex'), DATABASE_URL: db.url };
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    const code = await main(
      [...argv, '--json'],
      { out: (s) => out.push(s), err: (s) => err.push(s) },
      (json, o) => createContext(json, o),
    );
    expect(err.join('\n')).toBe('');
    expect(code).toBe(0);
  } finally {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
  return JSON.parse(out.pop()!);
}

const ledgerShow = async (requestId: string) =>
  (await cli('ledger', 'show', requestId)) as { accountId: string; entries: Record<string, unknown>[] }[];

describe('ledger show from the journal', () => {
  it('KEY-5 KEY-6 KEY-10 a rotated key, a deleted key and a refunded call are shown whole after archiving', async () => {
    const { accountId, keyId } = h;
    const beforeRotate = await call(h.secret);
    const rotated = await h.keys.rotate(accountId, keyId);
    const afterRotate = await call(rotated.secret);
    const doomed = await h.keys.create(accountId, { name: 'doomed' });
    const withDeleted = await call(doomed.secret);
    await h.keys.delete(accountId, doomed.key.id);
    await h.quiesce();
    // An operator refunds part of the first call (a refund names the charge's op id).
    const refundId = newId('refund');
    await h.metering.refund({
      accountId,
      refundId,
      of: `settle:${beforeRotate}`,
      amount: 1_000,
      usage: { keyId, model: CHAT_MODEL, kind: 'chat', requestId: beforeRotate },
    });
    await new Archiver(h.redis.client(), journal).pass();
    // Trimmed from Redis: what follows can only come from the journal.
    expect(await h.redis.client().xlen(accountKeys(accountId).usage)).toBe(0);

    const first = await ledgerShow(beforeRotate);
    expect(first).toHaveLength(1);
    expect(first[0]!.accountId).toBe(accountId);
    const [charge, refund] = first[0]!.entries;
    expect(charge).toMatchObject({
      type: 'charge',
      opId: `settle:${beforeRotate}`,
      keyId,
      model: CHAT_MODEL,
      requestId: beforeRotate,
    });
    expect(charge!.inputTokens).toBeGreaterThan(0);
    expect(charge!.outputTokens).toBeGreaterThan(0);
    expect(charge!.cost).toBe(charge!.amount);
    expect(refund).toMatchObject({
      type: 'refund',
      opId: `refund:${refundId}`,
      refundOf: `settle:${beforeRotate}`,
      amount: 1_000,
    });

    // Rotation keeps the key id: the call made with the new secret is filed under the same key.
    const second = await ledgerShow(afterRotate);
    expect(second[0]!.entries).toEqual([
      expect.objectContaining({ type: 'charge', keyId, requestId: afterRotate }),
    ]);
    // A deleted key's calls stay, under its id.
    const third = await ledgerShow(withDeleted);
    expect(third[0]!.entries).toEqual([
      expect.objectContaining({ type: 'charge', keyId: doomed.key.id, requestId: withDeleted }),
    ]);
    // Per key, by day, from the journal: the deleted key is still there.
    const days = await journal.daily(accountId);
    expect(days.map((d) => d.keyId).sort()).toEqual([keyId, doomed.key.id].sort());
    expect(days.find((d) => d.keyId === keyId)).toMatchObject({ requests: 2, refunded: 1_000 });
    // The CLI reads the same: each call, and per day.
    const calls = (await cli('usage', accountId, '--calls')) as { requestId: string; keyId: string }[];
    expect(calls.map((c) => c.requestId).sort()).toEqual(
      [beforeRotate, afterRotate, withDeleted, beforeRotate].sort(),
    );
    expect(await cli('usage', accountId, '--days', '--key', doomed.key.id)).toEqual([
      expect.objectContaining({ keyId: doomed.key.id, requests: 1, refunded: 0 }),
    ]);
    await expectLedgerClean(h.redis.client(), [accountId], 5_000, journal);
  });
});
