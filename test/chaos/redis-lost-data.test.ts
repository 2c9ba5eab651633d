// Chaos: Redis comes back without its data (restarted on an empty volume) while two replicas owe it
// settlements. The replicas notice it is not the Redis they knew (its epoch is gone), turn unready
// saying why, answer calls with a retryable 500 instead of 401s, and keep what they owe in their
// journals instead of writing it against accounts that are not there (no ghost account). `modelplane
// ledger check` fails naming the replicas. Redis restored from its append-only file: the replicas
// serve again, their journals land, every delivered call is charged exactly once, the check is clean.
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDecimalToNano } from '../../core/money.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import {
  chargesByRequest,
  eventually,
  ledgerCheckCli,
  MODEL,
  type ProxyProcess,
  startFleet,
} from './fleet.ts';

async function chat(p: ProxyProcess, secret: string) {
  const res = await fetch(`${p.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'lost' }], max_tokens: 8 }),
  });
  return {
    status: res.status,
    id: res.headers.get('x-request-id')!,
    retryAfter: res.headers.get('retry-after'),
    body: await res.text(),
  };
}

/** Empties a directory, keeping it. */
const wipe = (dir: string) => {
  for (const f of readdirSync(dir)) rmSync(join(dir, f), { recursive: true, force: true });
};

const readyz = async (p: ProxyProcess) => {
  const r = await fetch(`${p.url}/readyz`);
  const body = (await r.json()) as { checks: Record<string, boolean>; reasons?: string[] };
  return { status: r.status, checks: body.checks, reasons: body.reasons };
};

describe('Redis restarted without its data', () => {
  it('BILL-5 ERR-3 the replicas turn unready saying why, owe from their journals, write nothing into the empty Redis; ledger check fails; a restore lands everything exactly once', async () => {
    const fleet = await startFleet({ credit: parseDecimalToNano('50') });
    const backup = mkdtempSync(join(tmpdir(), 'mp-redis-backup-'));
    try {
      // Settlements may wait out the whole outage without the replicas refusing calls.
      const env = { PROXY_OUTBOX_STALL_MS: '60000' };
      const proxies = await Promise.all([fleet.startProxy('a', env), fleet.startProxy('b', env)]);
      const delivered: string[] = [];
      for (let i = 0; i < 20; i++) {
        const r = await chat(proxies[i % 2]!, fleet.secret);
        expect(r.status).toBe(200);
        delivered.push(r.id);
      }
      // Redis dies; calls carved from the replicas' leases are still served, their settlements owed.
      await fleet.redis.kill();
      cpSync(fleet.redis.dir, backup, { recursive: true }); // the operator's AOF/RDB backup
      let owedCalls = 0;
      for (let i = 0; i < 40 && owedCalls < 4; i++) {
        const r = await chat(proxies[i % 2]!, fleet.secret);
        if (r.status === 200) {
          delivered.push(r.id);
          owedCalls++;
        }
      }
      expect(owedCalls).toBeGreaterThan(0);

      // Redis comes back empty.
      wipe(fleet.redis.dir);
      await fleet.redis.restart();
      for (const p of proxies) {
        await eventually(async () => (await readyz(p)).status === 503, `${p.name} unready`);
        const r = await readyz(p);
        expect(r.checks.redisData).toBe(false);
        expect(r.reasons?.join(' ')).toMatch(
          /Redis lost its data or is another server: its epoch is missing/,
        );
        const call = await chat(p, fleet.secret);
        expect(call.status).toBe(500); // not a 401: the key is not wrong, the store is
        expect(call.retryAfter).toBe('5');
        expect(call.body).toMatch(/lost its data/);
      }
      const r = fleet.redis.client();
      const check = await ledgerCheckCli(fleet);
      expect(check.code).toBe(1);
      expect(check.output).toMatch(/replica .*: this Redis is not the one it knew \(epoch missing/);
      // Nothing was written against the missing account: no ghost record, no charge.
      expect(await r.keys(`{a:${fleet.accountId}}*`)).toEqual([]);
      for (const p of proxies) expect(p.output()).toMatch(/Redis is not the one this replica knew/);

      // The operator restores Redis from its backup.
      await fleet.redis.kill();
      wipe(fleet.redis.dir);
      cpSync(backup, fleet.redis.dir, { recursive: true });
      await fleet.redis.restart();
      for (const p of proxies)
        await eventually(async () => (await readyz(p)).status === 200, `${p.name} ready`);
      await eventually(async () => {
        const charges = await chargesByRequest(fleet);
        return delivered.every((id) => charges.has(id));
      }, 'every delivered call charged');
      for (const p of proxies) p.proc.kill('SIGTERM');
      expect(await Promise.all(proxies.map((p) => p.exited))).toEqual([0, 0]);
      const charges = await chargesByRequest(fleet);
      for (const id of delivered) expect(charges.get(id), `charges of ${id}`).toHaveLength(1);
      expect(charges.size).toBe(delivered.length);
      // The replicas' reports expire once they are gone (they live 10 s).
      await eventually(async () => (await ledgerCheckCli(fleet)).code === 0, 'ledger check clean', 30_000);
      await expectLedgerClean(fleet.redis.client(), [fleet.accountId]);
    } finally {
      await fleet.stop();
      rmSync(backup, { recursive: true, force: true });
    }
  }, 90_000);
});
