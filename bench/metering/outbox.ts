// What the settlement outbox costs a proxy per request (issue "Money that cannot leak"): the
// journal line written before each answer's last byte (one write(2) per event-loop turn, for every
// call finishing in it), and the group fsync before each lease batch is sent (off the request
// path, once per 10 ms tick).
//   npx tsx bench/metering/outbox.ts     (part of `make bench`; ~10 s; the journal on this repo's disk)
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SettlementJournal } from '../../proxy/billing/settlement-journal.ts';
import { root } from '../proxy/stack.ts';
import { benchUsage } from './usage-fixture.ts';

const RECORDS = Number(process.env.BENCH_RECORDS ?? 200_000);
const BATCHES = Number(process.env.BENCH_BATCHES ?? 500);

const usage = benchUsage(512);

function main(): Promise<void> {
  mkdirSync(join(root, 'bench', 'out'), { recursive: true });
  const dir = mkdtempSync(join(root, 'bench', 'out', 'outbox-'));
  return run(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
}

async function run(dir: string): Promise<void> {
  const { journal } = SettlementJournal.open(dir, { segmentBytes: 64 * 1024 * 1024 });
  const record = (i: number) =>
    journal.record({
      accountId: 'acct_0123456789abcdef',
      leaseId: 'lease_0123456789abcdef',
      holdId: `req_${i.toString(16).padStart(24, '0')}`,
      cost: 1_234_567,
      carved: 9_876_543,
      usage,
    });
  const turn = () => new Promise<void>((r) => journal.afterWrite(r));
  /** CPU µs per call (user + system) when `perTurn` calls finish in each event-loop turn. */
  const perCall = async (perTurn: number, calls: number) => {
    const start = process.cpuUsage();
    for (let i = 0; i < calls; i += perTurn) {
      for (let j = 0; j < perTurn; j++) seqs.push(record(i + j).seq);
      await turn();
    }
    const used = process.cpuUsage(start);
    return (used.user + used.system) / calls;
  };
  const seqs: number[] = [];
  await perCall(16, 20_000); // warm-up (JIT)
  const alone = await perCall(1, RECORDS / 4);
  const sixteen = await perCall(16, RECORDS);

  // A 10 ms tick's work at ~6,400 req/s: 64 records acknowledged, one batch line, one fsync.
  const fsyncMs: number[] = [];
  for (let b = 0; b < BATCHES; b++) {
    const batch = seqs.slice(b * 64, b * 64 + 64);
    journal.batch({
      accountId: 'acct_0123456789abcdef',
      leaseId: 'lease_x',
      batchId: String(b),
      seqs: batch,
    });
    const s = process.hrtime.bigint();
    await journal.durable();
    fsyncMs.push(Number(process.hrtime.bigint() - s) / 1e6);
    journal.ack(batch, { leaseId: 'lease_x', batchId: String(b) });
  }
  journal.ack(seqs);
  journal.close();
  fsyncMs.sort((a, b) => a - b);
  const at = (q: number) => fsyncMs[Math.min(fsyncMs.length - 1, Math.floor(q * fsyncMs.length))]!.toFixed(2);
  console.log('| measure | value |');
  console.log('| --- | ---: |');
  console.log(`| journal line per call, one call a turn (its own write(2)) | ${alone.toFixed(2)} µs CPU |`);
  console.log(
    `| journal line per call, 16 calls a turn (one write(2) for all) | ${sixteen.toFixed(2)} µs CPU |`,
  );
  console.log(
    `| group fsync per lease batch, p50 / p99 (off the request path) | ${at(0.5)} / ${at(0.99)} ms |`,
  );
  console.log(
    `| fsync per request at 64 records a batch (disk wait, not CPU) | ${((Number(at(0.5)) * 1000) / 64).toFixed(1)} µs |`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
