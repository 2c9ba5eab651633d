// Chaos: the proxy replica running a background response (issue 39) is SIGKILLed mid-job. The
// decision (docs/api.md "Background responses", Limits): a job is not moved to another replica;
// once its lease lapses the first reader marks it `failed` with a message saying its replica
// stopped, and the call's hold is voided by the surviving replica's sweeper (or, when the killed
// replica's journal holds the call as delivered, charged once on its restart) — nothing stays held,
// nothing is charged twice, and the ledger check is clean.
import { describe, expect, it } from 'vitest';
import { parseDecimalToNano } from '../../core/money.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { chargesByRequest, eventually, MODEL, startFleet } from './fleet.ts';

const env = { HOLD_TTL_MS: '1500', HOLD_SWEEPER_LOCK_MS: '500', HOLD_SWEEP_INTERVAL_MS: '100' };

describe('a background response whose replica is SIGKILLed mid-job', () => {
  it('BILL-5 ends failed with a clear error on the other replica, its hold released, never charged twice', async () => {
    // 400 ms a token: the simulator's answer (16..64 tokens) runs 6 s or more, so the kill lands
    // mid-job.
    const fleet = await startFleet({ credit: parseDecimalToNano('50'), sim: { itlMs: 400 } });
    try {
      const a = await fleet.startProxy('a', env);
      const b = await fleet.startProxy('b', env);
      const call = (p: { url: string }, path: string, body?: unknown) =>
        fetch(`${p.url}/v1${path}`, {
          method: body === undefined ? 'GET' : 'POST',
          headers: { authorization: `Bearer ${fleet.secret}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      const created = (await (
        await call(a, '/responses', {
          model: MODEL,
          input: 'Tell a long story',
          max_output_tokens: 200,
          background: true,
        })
      ).json()) as { id: string; status: string };
      expect(created.status).toBe('queued');
      const status = async (p: { url: string }) =>
        (await (await call(p, `/responses/${created.id}`)).json()) as {
          status: string;
          error: { code: string; message: string } | null;
        };
      await eventually(async () => (await status(b)).status === 'in_progress', 'the job runs on a');
      // Let it generate a while: tokens were made (and held for) when a dies.
      await new Promise((r) => setTimeout(r, 1_000));
      expect((await status(b)).status).toBe('in_progress');
      a.proc.kill('SIGKILL');
      await a.exited;

      // The lease (renewed every second, lapsing after 15 s) runs out; b then says failed.
      await eventually(async () => (await status(b)).status === 'failed', 'failed on b', 40_000);
      const failed = await status(b);
      expect(failed.error?.code).toBe('server_error');
      expect(failed.error?.message).toMatch(/replica running this response stopped/);
      // Said the same way on every later read.
      expect((await status(b)).status).toBe('failed');

      // a starts again on its journal: whatever it must still send lands now.
      const again = await fleet.startProxy('a-again', env, a.dataDir);
      const r = fleet.redis.client();
      await eventually(
        async () => Number(await r.hget(`{a:${fleet.accountId}}:account`, 'held')) === 0,
        'nothing held',
        20_000,
      );
      for (const p of [b, again]) p.proc.kill('SIGTERM');
      expect(await Promise.all([b.exited, again.exited])).toEqual([0, 0]);
      const charges = await chargesByRequest(fleet);
      for (const [id, list] of charges) expect(list, `charges of ${id}`).toHaveLength(1);
      expect(charges.size).toBeLessThanOrEqual(1);
      expect(Number(await r.hget(`{a:${fleet.accountId}}:account`, 'held'))).toBe(0);
      await expectLedgerClean(r, [fleet.accountId]);
    } finally {
      await fleet.stop();
    }
  }, 120_000);
});
