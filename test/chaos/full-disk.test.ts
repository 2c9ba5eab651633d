// Chaos: the proxy's PROXY_DATA_DIR is a small disk (a real tmpfs) that fills up. The proxy does not
// crash: a call already running is still answered once Redis has its settlement; new
// billable calls are refused with a retryable 500 while the journal cannot be written, /readyz says
// so (checks.journal) and mp_proxy_journal_write_failing_seconds counts; once there is room again the
// journal catches up and the proxy serves. Every delivered call is charged exactly once, the ledger
// check is clean. A replica SIGKILLed while its disk is full (issue 47) loses no delivered call:
// started again on the grown volume, it charges every one exactly once.
import { afterAll, describe, expect, it } from 'vitest';
import { parseDecimalToNano } from '../../core/money.ts';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { free, mountTmpfs } from '../helpers/tmpfs.ts';
import {
  chargesByRequest,
  eventually,
  expectFleetSettled,
  ledgerCheckCli,
  MODEL,
  startFleet,
  streamingLoad,
} from './fleet.ts';

const disk = mountTmpfs(64 * 1024);
/** The crash test's own disk: it is filled and grown. */
const crashDisk = mountTmpfs(64 * 1024);
if (disk === null) console.warn('full-disk chaos test skipped: mounting a tmpfs needs root');
afterAll(() => {
  disk?.unmount();
  crashDisk?.unmount();
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function chat(url: string, secret: string) {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'disk' }], max_tokens: 8 }),
  });
  return {
    status: res.status,
    id: res.headers.get('x-request-id')!,
    retryAfter: res.headers.get('retry-after'),
    body: await res.text(),
  };
}

const readyz = async (url: string) => {
  const r = await fetch(`${url}/readyz`);
  return { status: r.status, checks: ((await r.json()) as { checks: Record<string, boolean> }).checks };
};

const gauge = async (metricsUrl: string, name: string) => {
  const text = await (await fetch(metricsUrl)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
};

describe.skipIf(disk === null)('the journal disk fills up', () => {
  it('BILL-5 ERR-3 no crash: refused with a retryable 500 and unready while the journal cannot be written, serving again once it can; every delivered call charged once', async () => {
    const fleet = await startFleet({ credit: parseDecimalToNano('50') });
    try {
      const dataDir = `${disk!.dir}/proxy-a`;
      const a = await fleet.startProxy('a', {}, dataDir);
      // The disk is full before the proxy's first settlement line.
      const filler = disk!.fill();
      const delivered: string[] = [];
      const first = await chat(a.url, fleet.secret);
      expect(first.status).toBe(200); // running when the write failed: answered once Redis had its charge
      delivered.push(first.id);
      await eventually(async () => (await readyz(a.url)).status === 503, 'the proxy unready');
      expect((await readyz(a.url)).checks).toMatchObject({ journal: false });
      expect(await gauge(a.metricsUrl, 'mp_proxy_journal_write_failing_seconds')).toBeGreaterThan(0);
      const refused = await chat(a.url, fleet.secret);
      expect(refused.status).toBe(500);
      expect(refused.retryAfter).toBe('1');
      expect(refused.body).toMatch(/Billing is unavailable/);
      expect(a.proc.exitCode).toBeNull(); // alive
      expect(a.output()).toMatch(/settlement journal cannot be written/);

      free(filler);
      await eventually(async () => (await readyz(a.url)).status === 200, 'the proxy ready again');
      expect(await gauge(a.metricsUrl, 'mp_proxy_journal_write_failing_seconds')).toBe(0);
      for (let i = 0; i < 5; i++) {
        const ok = await chat(a.url, fleet.secret);
        expect(ok.status).toBe(200);
        delivered.push(ok.id);
      }
      a.proc.kill('SIGTERM');
      expect(await a.exited).toBe(0);
      const charges = await chargesByRequest(fleet);
      for (const id of delivered) expect(charges.get(id), `charges of ${id}`).toHaveLength(1);
      expect(charges.get(refused.id)).toBeUndefined();
      expect([...charges.keys()].sort()).toEqual([...delivered].sort());
      await expectLedgerClean(fleet.redis.client(), [fleet.accountId]);
    } finally {
      await fleet.stop();
    }
  }, 60_000);

  it('BILL-5 full disk under load, then SIGKILL (issue 47): no lease voided meanwhile, and started again on the grown volume the replica charges every delivered call exactly once', async () => {
    const fleet = await startFleet({ credit: parseDecimalToNano('50') });
    try {
      // A short ttl: a lease the full disk kept from being renewed would be voided within the test.
      const env = { HOLD_TTL_MS: '1500', HOLD_SWEEPER_LOCK_MS: '500', HOLD_SWEEP_INTERVAL_MS: '100' };
      const a = await fleet.startProxy('a', env, `${crashDisk!.dir}/a`);
      const b = await fleet.startProxy('b', env); // its sweeper voids what a stops renewing
      const load = streamingLoad(fleet, () => [a], { workers: 8, maxTokens: () => 30 });
      await sleep(1_500);
      // The disk fills under load: calls running then are answered once Redis has their charges.
      const filledAt = Date.now();
      crashDisk!.fill();
      await eventually(async () => /settlement journal cannot be written/.test(a.output()), 'the disk full');
      await sleep(3_000); // twice the lease ttl
      const voids = (await usageRecords(fleet.redis.client(), fleet.accountId, { count: 100_000 })).filter(
        (e) => e.type === 'void',
      );
      expect(voids, 'holds or leases voided while the disk was full').toEqual([]);
      a.proc.kill('SIGKILL');
      await a.exited;
      await load.stop();
      const delivered = load.calls.filter((c) => c.outcome === 'delivered');
      expect(
        delivered.filter((c) => c.endedAt > filledAt).length,
        'calls delivered on the full disk',
      ).toBeGreaterThan(0);

      crashDisk!.grow(1024 * 1024);
      const again = await fleet.startProxy('a', env, a.dataDir);
      await eventually(async () => {
        const charges = await chargesByRequest(fleet);
        return delivered.every((c) => charges.has(c.requestId!));
      }, 'every delivered call charged');
      // The journal held records whose acknowledgements the full disk refused: sent again, each
      // answered from its own done key, not charged twice.
      expect(again.output()).toMatch(/replaying settlements a previous process left/);
      again.proc.kill('SIGTERM');
      b.proc.kill('SIGTERM');
      expect(await again.exited).toBe(0);
      expect(await b.exited).toBe(0);
      const charges = await chargesByRequest(fleet);
      for (const c of delivered)
        expect(charges.get(c.requestId!), `charges of ${c.requestId}`).toHaveLength(1);
      for (const [id, list] of charges) expect(list, `charges of ${id}`).toHaveLength(1);
      await expectFleetSettled(
        fleet,
        charges,
        load.calls.map((c) => c.requestId),
      );
      const check = await ledgerCheckCli(fleet);
      expect(check.code, check.output).toBe(0);
    } finally {
      await fleet.stop();
    }
  }, 120_000);

  it('BILL-5 a call running when the disk fills, with Redis refusing its settlement, is not answered until Redis has its charge; meanwhile the gauges and ledger check show it owed', async () => {
    const fleet = await startFleet({ credit: parseDecimalToNano('50') });
    const r = fleet.redis.client();
    try {
      // Progress lines every 20 ms fill the page the journal's segment ends in, so once the disk is
      // full the call's own settlement line is refused (not taken by that page's slack).
      const env = { PROXY_REPLICA_REPORT_MS: '200', PROXY_STREAM_PROGRESS_MS: '20' };
      const a = await fleet.startProxy('a', env, `${disk!.dir}/proxy-held`);
      expect((await chat(a.url, fleet.secret)).status).toBe(200); // the lease exists
      // A stream of ~1 s: running when the disk fills and Redis starts refusing scripts (settlements).
      const res = await fetch(`${a.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${fleet.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: MODEL,
          messages: [{ role: 'user', content: 'held' }],
          max_tokens: 200,
          ignore_eos: true,
          stream: true,
        }),
      });
      expect(res.status).toBe(200);
      const id = res.headers.get('x-request-id')!;
      let answered = false;
      const body = res.text().then((t) => {
        answered = true;
        return t;
      });
      await r.call('ACL', 'SETUSER', 'default', '-eval', '-evalsha');
      const filler = disk!.fill();
      await eventually(
        async () => (await gauge(a.metricsUrl, 'mp_proxy_settlements_unwritten')) === 1,
        'owed from memory',
      );
      expect(await gauge(a.metricsUrl, 'mp_proxy_settlements_owed')).toBe(1);
      let check = { code: 0, output: '' };
      await eventually(async () => {
        check = await ledgerCheckCli(fleet);
        return /not answered yet/.test(check.output);
      }, 'ledger check shows the call owed');
      expect(check.output).toMatch(
        new RegExp(
          `OWED {2}replica .*: 1 settlements of calls not answered yet \\(the journal's disk is full; they wait for Redis\\): ${fleet.accountId} `,
        ),
      );
      expect(answered, 'answered while its charge existed only in the process').toBe(false);
      // Redis takes the settlement: the call is answered, though the disk is still full.
      await r.call('ACL', 'SETUSER', 'default', '+eval', '+evalsha');
      expect(await body).toMatch(/\[DONE\]/);
      expect((await chargesByRequest(fleet)).get(id)).toHaveLength(1);
      free(filler);
      a.proc.kill('SIGTERM');
      expect(await a.exited).toBe(0);
      const charges = await chargesByRequest(fleet);
      for (const [cid, list] of charges) expect(list, `charges of ${cid}`).toHaveLength(1);
      await expectLedgerClean(r, [fleet.accountId]);
    } finally {
      await r.call('ACL', 'SETUSER', 'default', '+eval', '+evalsha').catch(() => {});
      await fleet.stop();
    }
  }, 60_000);
});
