// What stream progress costs a proxy (issue 22): every PROXY_STREAM_PROGRESS_MS each running stream
// leaves a progress line in the journal (all of them in one write(2)). Measured against a call's own
// settlement line (record + its share of a write), the cost the journal already pays per request:
// the ratio says how many requests' worth of journal work one interval of N streams costs.
//   npx tsx bench/metering/progress.ts     (~5 s; the journal on this repo's disk)
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SettlementJournal } from '../../proxy/billing/settlement-journal.ts';
import { root } from '../proxy/stack.ts';
import { benchUsage } from './usage-fixture.ts';

const STREAMS = Number(process.env.BENCH_STREAMS ?? 200);
const INTERVALS = Number(process.env.BENCH_INTERVALS ?? 2_000);

const usage = benchUsage(0);
const line = (i: number, cost: number) => ({
  accountId: 'acct_0123456789abcdef',
  leaseId: 'lease_0123456789abcdef',
  holdId: `req_${i.toString(16).padStart(24, '0')}`,
  cost,
  carved: 9_876_543,
  usage,
});
const flushed = (j: SettlementJournal) => new Promise<void>((r) => j.afterWrite(r));

async function main(): Promise<void> {
  mkdirSync(join(root, 'bench', 'out'), { recursive: true });
  const dir = mkdtempSync(join(root, 'bench', 'out', 'progress-'));
  try {
    const { journal } = SettlementJournal.open(join(dir, 'p'), { segmentBytes: 64 * 1024 * 1024 });
    // One interval: every running stream's progress, one write.
    let t = process.hrtime.bigint();
    for (let k = 1; k <= INTERVALS; k++) {
      for (let i = 0; i < STREAMS; i++) journal.progress(line(i, k));
      await flushed(journal);
    }
    const perInterval = Number(process.hrtime.bigint() - t) / INTERVALS / 1e3;
    journal.close();
    // A request's settlement line, 64 calls finishing per event-loop turn (a busy proxy).
    const { journal: j2 } = SettlementJournal.open(join(dir, 'r'), { segmentBytes: 64 * 1024 * 1024 });
    const n = INTERVALS * 64;
    t = process.hrtime.bigint();
    for (let i = 0; i < n; i += 64) {
      for (let k = 0; k < 64; k++) j2.ack([j2.record(line(i + k, 1)).seq]);
      await flushed(j2);
    }
    const perRecord = Number(process.hrtime.bigint() - t) / n / 1e3;
    j2.close();
    console.log(
      "| streams | one interval (µs) | per stream (µs) | a request's settlement line (µs) | interval / request |",
    );
    console.log('|---|---|---|---|---|');
    console.log(
      `| ${STREAMS} | ${perInterval.toFixed(0)} | ${(perInterval / STREAMS).toFixed(2)} | ${perRecord.toFixed(2)} | ${(perInterval / perRecord).toFixed(1)} |`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
