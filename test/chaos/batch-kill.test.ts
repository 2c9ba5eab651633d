// Chaos: the batch runner's replica is SIGKILLed mid-batch and started again. Lines running at the
// kill never wrote a result, so they run again; lines whose result was written are billed under
// their own id, a retried settlement charging nothing. Then: every line has exactly one result and
// one charge, the hold is released, and the ledger check is clean.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { describe, expect, it } from 'vitest';
import { parseDecimalToNano } from '../../core/money.ts';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { MODEL, startFleet } from './fleet.ts';

const LINES = 60;

describe('a batch runner SIGKILLed mid-batch', () => {
  it('BILL-5 no line is lost or billed twice after a restart; the ledger check is clean', async () => {
    const fleet = await startFleet({ credit: parseDecimalToNano('50'), sim: { itlMs: 20 } });
    try {
      const env = {
        MEDIA_DIR: mkdtempSync(join(tmpdir(), 'mp-batch-media-')),
        BATCH_POLL_MS: '50',
        BATCH_LOCK_MS: '1000',
        BATCH_CONCURRENCY: '6',
      };
      const a = await fleet.startProxy('batch-a', env);
      const openai = new OpenAI({ apiKey: fleet.secret, baseURL: `${a.url}/v1`, maxRetries: 0 });
      const text = Array.from({ length: LINES }, (_, i) =>
        JSON.stringify({
          custom_id: `l${i}`,
          method: 'POST',
          url: '/v1/chat/completions',
          body: { model: MODEL, messages: [{ role: 'user', content: `line ${i}` }], max_tokens: 10 },
        }),
      ).join('\n');
      const file = await openai.files.create({
        file: await toFile(Buffer.from(text), 'in.jsonl'),
        purpose: 'batch',
      });
      const batch = await openai.batches.create({
        input_file_id: file.id,
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
      });
      // Killed once some lines are done and others are running.
      for (let i = 0; i < 600; i++) {
        if ((await openai.batches.retrieve(batch.id)).request_counts!.completed >= 10) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      a.proc.kill('SIGKILL');
      await a.exited;
      const doneAtKill = await fleet.redis.client().hlen(`{a:${fleet.accountId}}:batch:${batch.id}:results`);
      expect(doneAtKill).toBeLessThan(LINES);

      const b = await fleet.startProxy('batch-b', env);
      const again = new OpenAI({ apiKey: fleet.secret, baseURL: `${b.url}/v1`, maxRetries: 0 });
      let final = await again.batches.retrieve(batch.id);
      for (let i = 0; i < 1200 && final.status !== 'completed'; i++) {
        await new Promise((r) => setTimeout(r, 50));
        final = await again.batches.retrieve(batch.id);
      }
      expect(final.status).toBe('completed');
      expect(final.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
      const out = (await (await again.files.content(final.output_file_id!)).text())
        .split('\n')
        .filter(Boolean);
      expect(out.map((l) => JSON.parse(l).custom_id)).toEqual(
        Array.from({ length: LINES }, (_, i) => `l${i}`),
      );

      const charges = (await usageRecords(fleet.redis.client(), fleet.accountId, { count: 10_000 })).filter(
        (e) => e.type === 'charge' && e.requestId?.startsWith(`${batch.id}:`),
      );
      const byLine = new Map<string, number>();
      for (const c of charges) byLine.set(c.requestId!, (byLine.get(c.requestId!) ?? 0) + 1);
      expect(byLine.size).toBe(LINES);
      expect([...byLine.values()].every((n) => n === 1)).toBe(true);
      expect(Number(await fleet.redis.client().hget(`{a:${fleet.accountId}}:account`, 'held'))).toBe(0);
      b.proc.kill('SIGTERM');
      expect(await b.exited).toBe(0);
      await expectLedgerClean(fleet.redis.client(), [fleet.accountId]);
    } finally {
      await fleet.stop();
    }
  }, 120_000);
});
