// Chaos: Redis is killed and started again (from its append-only file) under streaming load across
// two proxy replicas, with credit leases on and off. Afterwards the ledger check is clean, every
// call a client saw delivered is charged exactly once, no refused call is charged, and no usage
// record is lost.
import { describe, expect, it } from 'vitest';
import { parseDecimalToNano } from '../../core/money.ts';
import { chargesByRequest, eventually, expectFleetSettled, startFleet, streamingLoad } from './fleet.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each([
  ['leases on', 'true'],
  ['leases off', 'false'],
])('Redis killed and restarted under streaming load, two replicas, %s', (_name, leases) => {
  it('BILL-5 the ledger is clean afterwards; every delivered call is charged exactly once, no refused call at all', async () => {
    const fleet = await startFleet({ credit: parseDecimalToNano('50') });
    try {
      // Settlements may wait out the whole outage without the replicas refusing calls.
      const env = { PROXY_LEASES: leases, PROXY_OUTBOX_STALL_MS: '20000' };
      const proxies = await Promise.all([fleet.startProxy('a', env), fleet.startProxy('b', env)]);
      const load = streamingLoad(fleet, () => proxies, {
        workers: 6,
        maxTokens: () => 20 + Math.floor(Math.random() * 40),
      });
      const delivered = () => load.calls.filter((c) => c.outcome === 'delivered');
      await eventually(async () => delivered().length > 30, 'calls delivered before the outage', 30_000);
      await fleet.redis.kill();
      const down = Date.now();
      // Down for at least 1.5 s, and until some call was delivered meanwhile (its settlement waits).
      await sleep(1_500);
      await eventually(
        async () => delivered().some((c) => c.endedAt > down),
        'a call delivered while Redis is down',
        30_000,
      );
      await fleet.redis.restart();
      const up = Date.now();
      await sleep(1_500);
      await load.stop();

      const all = delivered();
      expect(all.length).toBeGreaterThan(30);
      // Calls were delivered while Redis was down: their settlements waited in the outboxes.
      expect(all.filter((c) => c.endedAt > down && c.endedAt < up).length).toBeGreaterThan(0);
      await eventually(async () => {
        const charges = await chargesByRequest(fleet);
        return all.every((c) => charges.has(c.requestId!));
      }, 'every delivered call charged');
      // A graceful stop gives the leases back, so nothing stays held.
      for (const p of proxies) p.proc.kill('SIGTERM');
      expect(await Promise.all(proxies.map((p) => p.exited))).toEqual([0, 0]);

      const charges = await chargesByRequest(fleet);
      for (const c of all) expect(charges.get(c.requestId!), `charges of ${c.requestId}`).toHaveLength(1);
      for (const c of load.calls.filter((x) => x.outcome === 'refused'))
        expect(charges.get(c.requestId ?? ''), `charges of refused ${c.requestId}`).toBeUndefined();
      for (const c of load.calls.filter((x) => x.outcome === 'cut'))
        expect((charges.get(c.requestId!) ?? []).length).toBeLessThanOrEqual(1);
      await expectFleetSettled(
        fleet,
        charges,
        load.calls.map((c) => c.requestId),
      );
    } finally {
      await fleet.stop();
    }
  }, 90_000);
});
