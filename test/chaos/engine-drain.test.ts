// Chaos: an engine pod stops under streaming load, in the order operator/fleet/drain.ts gives every engine
// pod (a rollout or a scale-down): its endpoint leaves the catalogue (what the operator writes once
// the pod turns `terminating`), the preStop keeps it serving for CATALOGUE_PROPAGATION_SECONDS, then
// SIGTERM with a shutdown timeout (the simulator as vLLM's --shutdown-timeout): new calls refused
// before any byte (the proxy fails them over), running streams finish. Nothing is cut, every
// delivered call is charged once, nothing stays held, and the ledger check is clean.
import { describe, expect, it } from 'vitest';
import { CatalogueStore } from '../../core/catalogue/store.ts';
import { parseDecimalToNano } from '../../core/money.ts';
import { CATALOGUE_PROPAGATION_SECONDS } from '../../operator/fleet/drain.ts';
import {
  chargesByRequest,
  eventually,
  expectFleetSettled,
  MODEL,
  startFleet,
  streamingLoad,
} from './fleet.ts';

describe('an engine stopped under streaming load (preStop, then its own drain)', () => {
  it('BILL-5 100 live streams: none cut, each delivered call charged once, the ledger clean', async () => {
    const fleet = await startFleet({ credit: parseDecimalToNano('500'), sim: { itlMs: 20 } });
    try {
      const a = await fleet.startProxy('a');
      const b = await fleet.startProxy('b');
      // Most streams take about a second; one in ten runs 12 s, so some are still running on the
      // stopping engine when its preStop ends and it is told to stop.
      let n = 0;
      const load = streamingLoad(fleet, () => [a, b], {
        workers: 100,
        maxTokens: () => (++n % 10 === 0 ? 600 : 50),
      });
      const [leaving, staying] = [fleet.sims[0]!, fleet.sims[1]!];
      await eventually(
        async () => leaving.inFlight() >= 10,
        'streams running on the engine that leaves',
        30_000,
      );
      // 1. The pod is terminating: the operator writes the catalogue without it.
      await new CatalogueStore(fleet.redis.client()).put({
        id: MODEL,
        kind: 'chat',
        pricing: { USD: { input: '1', cachedInput: '0.5', output: '2' } },
        endpoints: [{ url: staying.url }],
        created: 1,
      });
      // 2. The preStop: still serving while the change reaches the proxies.
      await new Promise((r) => setTimeout(r, CATALOGUE_PROPAGATION_SECONDS * 1000));
      const runningAtSigterm = leaving.inFlight();
      // 3. SIGTERM with a shutdown timeout (the Model's drainSeconds, default 40).
      await leaving.shutdown(40_000);
      await load.stop();

      expect(runningAtSigterm).toBeGreaterThan(0); // the engine's own drain was exercised
      const calls = load.calls;
      expect(calls.length).toBeGreaterThanOrEqual(100);
      expect(calls.filter((c) => c.outcome !== 'delivered')).toEqual([]);
      // Settlements land asynchronously after the last byte.
      await eventually(
        async () => {
          const charged = await chargesByRequest(fleet);
          return calls.every((c) => charged.has(c.requestId!));
        },
        'every delivered call charged',
        30_000,
      );
      // The proxies stop as in a deploy: their credit leases go back, so nothing stays held.
      for (const p of [a, b]) {
        p.proc.kill('SIGTERM');
        expect(await p.exited).toBe(0);
      }
      const settled = await chargesByRequest(fleet);
      for (const c of calls) expect(settled.get(c.requestId!), `charges of ${c.requestId}`).toHaveLength(1);
      await expectFleetSettled(
        fleet,
        settled,
        calls.map((c) => c.requestId),
      );
    } finally {
      await fleet.stop();
    }
  }, 180_000);
});
