// Chaos: Redis hangs (SIGSTOP: connections stay open, nothing is answered) under load across two
// replicas, with credit leases on and off. No call waits for the whole outage: a request-path
// command gives up after REDIS_COMMAND_TIMEOUT_MS and the call gets a retryable 500 with
// Retry-After; past PROXY_OUTBOX_STALL_MS the replicas refuse billable calls at once and /readyz
// says 503, as for a dead Redis. When Redis resumes, the replicas serve again at once (asserted:
// within half a second plus two calls' time) with no burst of 500s: the probe each sent while
// Redis was stopped is answered first and wakes the outbox. Every delivered call is charged
// exactly once, no refused call at all, the ledger check is clean.
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

/** The 90th percentile of `ms` (0 for none). */
function p90(ms: number[]): number {
  const sorted = [...ms].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.9))] ?? 0;
}

const WORKERS = 6;
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
      const l = load(fleet, proxies, WORKERS);
      await eventually(async () => l.calls.filter((c) => c.status === 200).length >= 20, 'calls served');
      // How long a call takes on this machine, now, under this load: the yardstick of the
      // recovery bound below.
      await new Promise((r) => setTimeout(r, 1_000));
      const callMs = p90(
        l.calls
          .filter((c) => c.status === 200 && c.startedAt > Date.now() - 1_000)
          .map((c) => c.endedAt! - c.startedAt),
      );

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
      // The replicas refuse nothing once this long after the resume.
      const lastRefused = Math.max(0, ...refusedAfter.map((c) => c.endedAt! - resumedAt));
      // Served again "at once": the probe's read sent while Redis was stopped is the first thing
      // Redis answers, and it wakes the outbox (proxy/billing/redis-probe.ts). So the first call
      // served, and the last one refused, come within half a second plus two calls' time measured
      // just before the outage (a loaded machine slows every call, and a replica answers no faster
      // than it answers any call; idle that is a few ms). The defect this guards against is the
      // outbox sleeping out its backoff, up to 2 s (outbox.ts maxBackoffMs).
      const recoveryBound = 500 + 2 * callMs;
      console.log(
        `redis hung (${leases === 'true' ? 'leases' : 'no leases'}): calls took ${callMs} ms (p90) before; after resume the first 200 in ${first} ms, the last refusal in ${lastRefused} ms, ${refusedAfter.length} refused (bound ${recoveryBound} ms)`,
      );
      expect(first).toBeLessThanOrEqual(recoveryBound);
      expect(lastRefused).toBeLessThanOrEqual(recoveryBound);
      // No burst. A worker refused at once sleeps 20 ms and tries again, so it gathers one refusal
      // per ~20–25 ms its replica still refuses: the defect (the outbox sleeping out a 2 s backoff)
      // gave 120–792 in all. The replicas notice within a round trip, so a worker sees 0–1 idle and
      // two on a loaded machine (13 in all seen on a loaded clean-clone run); six per worker — about
      // 150 ms of refusing — is that loaded run's count with room, still far below the defect's.
      expect(refusedAfter.length).toBeLessThanOrEqual(6 * WORKERS);
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
