// Chaos: Redis hangs (SIGSTOP: connections stay open, nothing is answered) under load across two
// replicas, with credit leases on and off. No call waits for the whole outage: a request-path
// command gives up after REDIS_COMMAND_TIMEOUT_MS and the call gets a retryable 500 with
// Retry-After; past PROXY_OUTBOX_STALL_MS the replicas refuse billable calls at once and /readyz
// says 503, as for a dead Redis. When Redis resumes, the replicas serve again at once (no burst of
// 500s: the PING each sent while Redis was stopped is answered first and wakes the outbox). Every
// delivered call is charged exactly once, no refused call at all, the ledger check is clean.
import { describe, expect, it } from 'vitest';
import { parseDecimalToNano } from '../../core/money.ts';
import {
  chargesByRequest,
  eventually,
  expectFleetSettled,
  type Fleet,
  MODEL,
  type ProxyProcess,
  startFleet,
} from './fleet.ts';

interface Call {
  id: string | null;
  startedAt: number;
  endedAt: number | null;
  status: number | null;
  retryAfter: string | null;
}

/** Non-streamed calls from `workers` loops, round robin over the proxies, until stop(). */
function load(fleet: Fleet, proxies: ProxyProcess[], workers: number) {
  const calls: Call[] = [];
  let running = true;
  const worker = async (w: number) => {
    for (let i = 0; running; i++) {
      const p = proxies[(w + i) % proxies.length]!;
      const call: Call = { id: null, startedAt: Date.now(), endedAt: null, status: null, retryAfter: null };
      calls.push(call);
      try {
        const res = await fetch(`${p.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${fleet.secret}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            model: MODEL,
            messages: [{ role: 'user', content: `hung ${w} ${i}` }],
            max_tokens: 10,
          }),
          // A client's own patience: longer than any bound the proxy must keep.
          signal: AbortSignal.timeout(20_000),
        });
        await res.text();
        call.id = res.headers.get('x-request-id');
        call.status = res.status;
        call.retryAfter = res.headers.get('retry-after');
      } catch {
        // the client gave up: status stays null
      }
      call.endedAt = Date.now();
      if (call.status !== 200) await new Promise((r) => setTimeout(r, 20));
    }
  };
  const done = Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
  return {
    calls,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

const readyz = async (p: ProxyProcess) => (await fetch(`${p.url}/readyz`)).status;

describe.each([
  ['leases on', 'true'],
  ['leases off', 'false'],
])('Redis hung (SIGSTOP) under load, two replicas, %s', (_name, leases) => {
  it('ERR-3 BILL-5 calls get a bounded, retryable 500 while it hangs, are served again at once when it resumes; every delivered call charged once', async () => {
    const fleet = await startFleet({ credit: parseDecimalToNano('50') });
    try {
      const env = { PROXY_LEASES: leases, REDIS_COMMAND_TIMEOUT_MS: '500', PROXY_OUTBOX_STALL_MS: '1500' };
      const proxies = await Promise.all([fleet.startProxy('a', env), fleet.startProxy('b', env)]);
      const l = load(fleet, proxies, 6);
      await eventually(async () => l.calls.filter((c) => c.status === 200).length >= 20, 'calls served');

      fleet.redis.pause();
      const pausedAt = Date.now();
      // Calls started during the outage end, refused with a retryable 500 and Retry-After.
      const refusedDuring = () =>
        l.calls.filter((c) => c.startedAt > pausedAt && c.status === 500 && c.retryAfter === '1');
      await eventually(async () => refusedDuring().length >= 20, 'calls refused while Redis hangs', 15_000);
      for (const p of proxies)
        await eventually(async () => (await readyz(p)) === 503, `${p.name} unready while Redis hangs`);
      // No call waits for the whole outage: none started 3 s before now is still running.
      const now = Date.now();
      expect(l.calls.filter((c) => c.endedAt === null && c.startedAt < now - 3_000)).toEqual([]);

      fleet.redis.resume();
      const resumedAt = Date.now();
      const servedAfter = () => l.calls.filter((c) => c.startedAt >= resumedAt && c.status === 200);
      await eventually(async () => servedAfter().length >= 20, 'calls served after Redis resumed');
      const first = Math.min(...servedAfter().map((c) => c.endedAt!)) - resumedAt;
      const refusedAfter = l.calls.filter(
        (c) => c.startedAt >= resumedAt && c.endedAt !== null && c.status !== 200,
      );
      console.log(
        `redis hung (${leases === 'true' ? 'leases' : 'no leases'}): first 200 ${first} ms after resume, ${refusedAfter.length} calls refused after resume`,
      );
      // No burst: a few calls per worker race the replicas noticing Redis is back (idle: 0–4 in
      // all; a clean-clone run on a loaded machine saw 13). The defect this guards against was
      // 120–792 refusals within 2 s of the resume, so six per worker still tells the two apart.
      expect(refusedAfter.length).toBeLessThanOrEqual(36);
      await l.stop();

      for (const p of proxies) p.proc.kill('SIGTERM');
      expect(await Promise.all(proxies.map((p) => p.exited))).toEqual([0, 0]);
      const charges = await chargesByRequest(fleet);
      for (const c of l.calls.filter((x) => x.status === 200))
        expect(charges.get(c.id!), `charges of ${c.id}`).toHaveLength(1);
      for (const c of l.calls.filter((x) => x.status !== null && x.status !== 200))
        expect(charges.get(c.id ?? ''), `charges of refused ${c.id}`).toBeUndefined();
      await expectFleetSettled(
        fleet,
        charges,
        l.calls.map((c) => c.id),
      );
    } finally {
      await fleet.stop();
    }
  }, 60_000);
});
