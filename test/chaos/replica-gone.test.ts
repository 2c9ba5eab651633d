// Chaos: a replica owes settlements (Redis refuses its settle scripts — an ACL that denies EVAL —
// while it still takes the replica's report), is SIGKILLed, and its volume is gone for good. (A full
// journal disk no longer leaves delivered calls owed: their answers wait for Redis, issue 47.) It published what it owed in
// Redis while it lived (mp:replica:<name>, core/billing/replica-reports.ts): `modelplane ledger check` names
// it once it has gone silent, with the exact amount per account. The money is accounted for exactly:
// what the ledger charged plus what the check names as lost is what the clients were delivered.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { replicaReports } from '../../core/billing/replica-reports.ts';
import { formatNano, parseDecimalToNano } from '../../core/money.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import {
  chargesByRequest,
  eventually,
  ledgerCheckCli,
  MODEL,
  type ProxyProcess,
  startFleet,
} from './fleet.ts';

interface Delivered {
  id: string;
  /** What the call cost at the catalogue's prices (input 1, output 2 per 1M tokens): nano. */
  cost: number;
}

async function chat(p: ProxyProcess, secret: string): Promise<Delivered | null> {
  const res = await fetch(`${p.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'gone' }], max_tokens: 8 }),
  });
  const body = (await res.json()) as { usage?: { prompt_tokens: number; completion_tokens: number } };
  if (res.status !== 200) return null;
  const u = body.usage!;
  return {
    id: res.headers.get('x-request-id')!,
    cost: u.prompt_tokens * 1_000 + u.completion_tokens * 2_000,
  };
}

describe('a replica whose volume is gone for good', () => {
  it('BILL-5 ledger check names it with the amount it owed; charged + named = delivered, exactly', async () => {
    const fleet = await startFleet({ credit: parseDecimalToNano('50') });
    try {
      const env = { PROXY_REPLICA_REPORT_MS: '200', HOLD_TTL_MS: '1500', HOLD_SWEEPER_LOCK_MS: '500' };
      const a = await fleet.startProxy('a', env, mkdtempSync(join(tmpdir(), 'mp-chaos-gone-')));
      await fleet.startProxy('b', env); // its sweeper voids a's lease once a is gone
      const delivered: Delivered[] = [];
      for (let i = 0; i < 10; i++) {
        const d = await chat(a, fleet.secret);
        expect(d).not.toBeNull();
        delivered.push(d!);
      }
      // Redis refuses scripts (settlements) and takes plain writes (the report): the calls the
      // lease covers are delivered, journaled, and owed.
      const r = fleet.redis.client();
      await r.call('ACL', 'SETUSER', 'default', '-eval', '-evalsha');
      for (const d of await Promise.all(Array.from({ length: 30 }, () => chat(a, fleet.secret))))
        if (d !== null) delivered.push(d);
      const uncharged = async () => {
        const charges = await chargesByRequest(fleet);
        return delivered.filter((d) => !charges.has(d.id));
      };
      // a's report says exactly what it has not settled.
      await eventually(async () => {
        const owed = await uncharged();
        const report = (await replicaReports(fleet.redis.client())).find((r) =>
          r.replica.endsWith(a.dataDir),
        );
        return (
          owed.length > 0 &&
          report?.owed === owed.length &&
          report.byAccount[fleet.accountId]?.nano === owed.reduce((s, d) => s + d.cost, 0)
        );
      }, "a's report matches what it owes");
      const lost = await uncharged();
      const lostNano = lost.reduce((s, d) => s + d.cost, 0);
      // Its gauges say so too: owed, and all of it in the journal file.
      const metrics = await (await fetch(a.metricsUrl)).text();
      expect(metrics).toMatch(new RegExp(`^mp_proxy_settlements_owed ${lost.length}$`, 'm'));
      expect(metrics).toMatch(/^mp_proxy_settlements_unwritten 0$/m);

      a.proc.kill('SIGKILL');
      await a.exited;
      rmSync(a.dataDir, { recursive: true, force: true }); // the volume is gone
      await r.call('ACL', 'SETUSER', 'default', '+eval', '+evalsha');

      let check = { code: 0, output: '' };
      await eventually(
        async () => {
          check = await ledgerCheckCli(fleet);
          return check.code === 1 && /SILENT/.test(check.output);
        },
        'ledger check names the silent replica',
        30_000,
      );
      // Named by host and data directory (the volume an operator would look for).
      expect(check.output).toContain(`:${a.dataDir} has been silent for`);
      expect(check.output).toContain(
        `owing ${lost.length} settlements: ${fleet.accountId} ${formatNano(lostNano)} (${lost.length})`,
      );

      // Exactly accounted: the ledger charged every other delivered call, at its cost.
      const charges = await chargesByRequest(fleet);
      let charged = 0;
      for (const d of delivered.filter((x) => !lost.includes(x))) {
        expect(charges.get(d.id), `charges of ${d.id}`).toHaveLength(1);
        expect(charges.get(d.id)![0]!.cost).toBe(d.cost);
        charged += d.cost;
      }
      expect(charged + lostNano).toBe(delivered.reduce((s, d) => s + d.cost, 0));
      await eventually(
        async () => Number(await r.hget(`{a:${fleet.accountId}}:account`, 'held')) === 0,
        "a's lease voided",
      );
      await expectLedgerClean(r, [fleet.accountId]);
    } finally {
      await fleet.stop();
    }
  }, 90_000);
});
