// Chaos: SIGTERM under streaming load, as in every rolling deploy. The replica stops taking calls,
// lets running streams finish within PROXY_SHUTDOWN_GRACE_MS and ends the longer ones with an
// in-band error, lands its settlements and gives its leases back before it exits: every call is
// charged (a delivered one in full, an ended one for what it delivered), nothing stays held, and
// the ledger check is clean.
import { describe, expect, it } from 'vitest';
import { parseDecimalToNano } from '../../core/money.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { chargesByRequest, eventually, type ProxyProcess, startFleet, streamingLoad } from './fleet.ts';

describe('SIGTERM under streaming load', () => {
  it('BILL-5 every call is charged: delivered ones in full, ones ended at the grace period for what they delivered', async () => {
    const fleet = await startFleet({ credit: parseDecimalToNano('50'), sim: { itlMs: 10 } });
    try {
      const env = { PROXY_SHUTDOWN_GRACE_MS: '1000' };
      const a = await fleet.startProxy('a', env);
      const b = await fleet.startProxy('b', env);
      let live: ProxyProcess[] = [a, b];
      // Most streams take 0.2–0.6 s; one in three of a's runs 4 s, past the grace period — the
      // third call a gets is one, made at the start, so one is surely running when a is stopped
      // (left to chance, a run on a loaded machine had none running there).
      let onA = 0;
      const load = streamingLoad(fleet, () => live, {
        workers: 8,
        maxTokens: (proxy) => (proxy === 'a' && ++onA % 3 === 0 ? 400 : 20 + Math.floor(Math.random() * 40)),
      });
      // a is stopped once it has served a few streams (a fixed wait can see too few on a loaded
      // machine); its long third stream is running by then.
      const deliveredOnA = () =>
        load.calls.filter((c) => c.proxy === 'a' && c.outcome === 'delivered').length;
      await eventually(async () => deliveredOnA() > 5, 'a delivered some streams', 30_000);
      live = [b];
      a.proc.kill('SIGTERM');
      expect(await a.exited).toBe(0);
      await load.stop();
      b.proc.kill('SIGTERM');
      expect(await b.exited).toBe(0);

      const charges = await chargesByRequest(fleet);
      const callsOnA = load.calls.filter((c) => c.proxy === 'a');
      const delivered = load.calls.filter((c) => c.outcome === 'delivered');
      const ended = callsOnA.filter((c) => c.outcome === 'cut');
      expect(delivered.filter((c) => c.proxy === 'a').length).toBeGreaterThan(5);
      expect(ended.length).toBeGreaterThan(0); // long streams were running at a's shutdown
      for (const c of [...delivered, ...ended])
        expect(charges.get(c.requestId!), `charges of ${c.requestId}`).toHaveLength(1);
      for (const c of ended) expect(charges.get(c.requestId!)![0]!.outputTokens).toBeLessThan(400);
      for (const c of load.calls.filter((x) => x.outcome === 'refused'))
        expect(charges.get(c.requestId ?? '')).toBeUndefined();
      const r = fleet.redis.client();
      expect(Number(await r.hget(`{a:${fleet.accountId}}:account`, 'held'))).toBe(0);
      await expectLedgerClean(r, [fleet.accountId]);
    } finally {
      await fleet.stop();
    }
  }, 90_000);
});
