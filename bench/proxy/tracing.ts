// What tracing costs the proxy (issue 21 item 6): the same full proxy stack (./stack.ts) twice in
// one run, tracing off and on at 1 % sampling (BENCH_TRACE_RATIO), exporting to an OTLP/HTTP receiver
// in this process that counts the spans it gets (so "on" is shown to export). The targets take turns
// in short slices (ROUNDS), as in run.ts, so the machine's drift falls on all of them alike; each
// round's ratio to "off" is also taken, and their median reported.
//   nice -n 10 npx tsx bench/proxy/tracing.ts      (prints the table; figures go in bench/RESULTS.md)
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import { type Stack, startStack, WARMUP_S } from './stack.ts';

const SLICE_S = Number(process.env.BENCH_SLICE_S ?? 1);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const CONNECTIONS = 32;

async function main() {
  let spans = 0;
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // OTLP/JSON: count the spans without keeping them.
      spans += Buffer.concat(chunks).toString('utf8').split('"spanId"').length - 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  // Two stacks only: a third traced at 100 % (exporting ~6 spans a request) kept exporting into
  // the next slices and the receiver here competed with the load generator, which cost whichever
  // target came next (the 1 % one, by 20 %). BENCH_TRACE_RATIO=1 measures full sampling instead.
  // BENCH_TRACE_RATIO=off: both stacks untraced, the control (how far two equal stacks differ).
  const ratio = process.env.BENCH_TRACE_RATIO ?? '0.01';
  const variants: { name: string; env: Record<string, string> }[] = [
    { name: 'tracing off', env: {} },
    ratio === 'off'
      ? { name: 'tracing off (a second, equal stack)', env: {} }
      : {
          name: `tracing on, ${Number(ratio) * 100} % sampled`,
          env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, PROXY_TRACE_SAMPLE_RATIO: ratio },
        },
  ];
  const stacks: Stack[] = [];
  try {
    for (const v of variants) {
      stacks.push(await startStack({ proxyEnv: v.env }));
      process.env.BENCH_BUILT = '1'; // built once, by the first stack
    }
    const load = async (s: Stack, body: string, seconds: number) => {
      const res = await autocannon({
        url: `${s.proxy.url}/v1/chat/completions`,
        method: 'POST',
        headers: s.headers,
        body,
        connections: CONNECTIONS,
        duration: seconds,
      });
      if (res.non2xx > 0 || res.errors > 0) throw new Error(`${res.non2xx} non-2xx, ${res.errors} errors`);
      return { requests: res.requests.total, seconds: res.duration };
    };
    for (const s of stacks) for (const body of [s.plain, s.streamed]) await load(s, body, WARMUP_S);

    const lines = [
      `| scenario (${CONNECTIONS} connections) | target | req/s | vs off (totals) | vs off (median of rounds) |`,
      '|---|---|---:|---:|---:|',
    ];
    for (const [scenario, pick] of [
      ['non-streaming', (s: Stack) => s.plain],
      ['streaming (whole stream)', (s: Stack) => s.streamed],
    ] as const) {
      const totals = stacks.map(() => ({ requests: 0, seconds: 0 }));
      const perRound: number[][] = stacks.map(() => []);
      const spansBefore = spans;
      for (let round = 0; round < ROUNDS; round++) {
        // Every other round in reverse order, so a drift within a round favours no target.
        const order = [...stacks.keys()];
        if (round % 2 === 1) order.reverse();
        const rps: number[] = [];
        for (const i of order) {
          const r = await load(stacks[i]!, pick(stacks[i]!), SLICE_S);
          totals[i]!.requests += r.requests;
          totals[i]!.seconds += r.seconds;
          rps[i] = r.requests / r.seconds;
        }
        for (const i of stacks.keys()) perRound[i]!.push(rps[i]! / rps[0]!);
        process.stderr.write('.');
      }
      const rps = totals.map((t) => t.requests / t.seconds);
      for (const [i, v] of variants.entries())
        lines.push(
          `| ${i === 0 ? scenario : ''} | ${v.name} | ${rps[i]!.toFixed(0)} | ${(rps[i]! / rps[0]!).toFixed(3)} | ${median(perRound[i]!).toFixed(3)} |`,
        );
      lines.push(`| | spans received | ${spans - spansBefore} | | |`);
    }
    process.stderr.write('\n');
    console.log(lines.join('\n'));
  } finally {
    await Promise.all(stacks.map((s) => s.stop()));
    receiver.close();
  }
}

/** The median: a round's ratio taken in one round is robust to the machine's drift between rounds. */
function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => {
    setTimeout(() => process.exit(), 500).unref();
  });
