// Proxy benchmark: the same payloads against (a) the simulator directly, (b) a bare fastify+undici
// pass-through, (c) the full proxy (auth, catalogue, credit hold + settle, metrics), and (d) the
// same proxy's Messages surface and (e) its Responses surface (each call translated to chat and
// back; (f) the same storing each response, store: true), in one run. BENCH_TARGETS=e,f runs (a),
// (b), (c) and the targets named. Each row also says the CPU time its target's process spent per
// request (/proc), steadier than the rates on a shared machine.
// Each server runs in its own process; the load generator runs here. Whole run ~2.5 minutes.
//   npx tsx bench/proxy/run.ts            (writes bench/out/proxy.md and prints the table; the curated
//                                          history stays in bench/proxy/RESULTS.md and bench/RESULTS.md)
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import autocannon from 'autocannon';
import { percentiles, probeLatency } from './latency.ts';
import { cpuUs } from './proc-cpu.ts';
import { root, type Stack, startStack, WARMUP_S } from './stack.ts';

const LOAD_S = Number(process.env.BENCH_SECONDS ?? 5);
const PROBE_MS = Number(process.env.BENCH_PROBE_MS ?? 3000);
// Each scenario's time per target is cut into ROUNDS slices and the targets take turns, instead of
// one block per target: this machine's speed drifted by up to 2x within a minute, and a slow phase
// that fell on one target alone moved c/b by ±0.1 between otherwise equal runs.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

/** One slice's measurement: its request count and time, and its latencies. */
interface Slice {
  requests: number;
  seconds: number;
  p50: number;
  p99: number;
  /** Every latency (1-connection probes), for exact percentiles over all slices. */
  samples?: number[];
  /** CPU time the target's own process spent in the slice, µs. */
  cpuUs: number;
}

let stack: Stack | undefined;

async function main() {
  stack = await startStack(
    process.env.BENCH_PROFILE ? { profile: { dir: process.env.BENCH_PROFILE, target: 'proxy' } } : {},
  );
  const { headers, plain, streamed } = stack;
  const chat = { path: '/v1/chat/completions', plain, streamed };
  const proxy = { url: stack.proxy.url, pid: stack.proxy.pid };
  const targets = [
    { url: stack.sim.url, pid: stack.sim.pid, ...chat },
    { url: stack.bare.url, pid: stack.bare.pid, ...chat },
    { ...proxy, ...chat },
    {
      ...proxy,
      path: '/v1/messages',
      plain: stack.messagesPlain,
      streamed: stack.messagesStreamed,
    },
    {
      ...proxy,
      path: '/v1/responses',
      plain: stack.responsesPlain,
      streamed: stack.responsesStreamed,
    },
    // (f) the same with store: true (OpenAI's default): the call also writes the response to Redis.
    {
      ...proxy,
      path: '/v1/responses',
      plain: stack.responsesPlainStored,
      streamed: stack.responsesStreamedStored,
    },
  ].map((t, i) => ({ ...t, name: NAMES[i]! }));
  // BENCH_TARGETS=e,f measures only those (with (a), (b) and (c), which every ratio needs): a shorter
  // run that interleaves just the surfaces compared.
  const only = process.env.BENCH_TARGETS?.split(',').map((s) => s.trim());
  if (only !== undefined)
    targets.splice(0, targets.length, ...targets.filter((t, i) => i < 3 || only.includes(t.name[1]!)));
  type Target = (typeof targets)[number];

  const load = async (t: Target, body: string, connections: number, seconds: number): Promise<Slice> => {
    const url = t.url;
    const cpu = cpuUs(t.pid);
    const res = await autocannon({
      url: `${url}${t.path}`,
      method: 'POST',
      headers,
      body,
      connections,
      duration: seconds,
    });
    if (res.non2xx > 0 || res.errors > 0)
      throw new Error(`${url}: ${res.non2xx} non-2xx, ${res.errors} errors`);
    return {
      requests: res.requests.total,
      seconds: res.duration,
      p50: res.latency.p50,
      p99: res.latency.p99,
      cpuUs: cpuUs(t.pid) - cpu,
    };
  };
  const probe = async (t: Target, body: string, firstFrame: boolean): Promise<Slice> => {
    const cpu = cpuUs(t.pid);
    const r = await probeLatency({ url: t.url, path: t.path, body, headers, firstFrame }, PROBE_MS / ROUNDS);
    return { ...r, cpuUs: cpuUs(t.pid) - cpu };
  };

  // Warm-up (JIT, keep-alive pools, the proxy's key cache), both payloads, as measured below.
  for (const t of targets) for (const body of [t.plain, t.streamed]) await load(t, body, 32, WARMUP_S);

  const rows: { scenario: string; unit: string; results: Row[] }[] = [];
  const run = async (scenario: string, unit: string, f: (t: Target) => Promise<Slice>) => {
    const slices: Slice[][] = targets.map(() => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, t] of targets.entries()) slices[i]!.push(await f(t));
      process.stderr.write('.');
    }
    rows.push({ scenario, unit, results: slices.map(combine) });
  };
  const slice = LOAD_S / ROUNDS;
  await run('non-streaming, 32 connections', 'ms (autocannon)', (t) => load(t, t.plain, 32, slice));
  await run('streaming, 32 connections (whole stream)', 'ms (autocannon)', (t) =>
    load(t, t.streamed, 32, slice),
  );
  await run('non-streaming, 1 connection', 'ms', (t) => probe(t, t.plain, false));
  await run('streaming TTFT, 1 connection', 'ms to first frame', (t) => probe(t, t.streamed, true));
  process.stderr.write('\n');

  const table = render(
    rows,
    targets.map((t) => t.name),
  );
  const doc = `# Proxy benchmark\n\nGenerated by \`npx tsx bench/proxy/run.ts\` on ${new Date().toISOString()} (${availableParallelism()} CPUs; simulator, bare pass-through, proxy and load generator share them). Simulator: ttft 0 ms, itl 0 ms, 16 output tokens. Bare pass-through: fastify + undici, no auth, no billing, no frame parsing. Full proxy: cached key lookup, catalogue, credit hold (concurrent reserve) and settlement, usage frames parsed, metrics. (d): the full proxy's Messages surface, same call; (e): its Responses surface, same call, store: false; (f): the same with store: true (x/b and x−a columns are the row's own target against (b) and (a); x/c the other surfaces against the chat surface; CPU µs/req: the target's own process — simulator, pass-through or proxy — per request).\n\n${table}\n`;
  mkdirSync(`${root}bench/out`, { recursive: true });
  writeFileSync(`${root}bench/out/proxy.md`, doc);
  console.log(table);
}

/**
 * A target's figures over its slices: requests over time for the rate; exact percentiles over all
 * samples when there are samples, else the median of the slices' own (autocannon's) percentiles.
 */
function combine(slices: Slice[]): Row {
  const requests = slices.reduce((n, s) => n + s.requests, 0);
  const seconds = slices.reduce((n, s) => n + s.seconds, 0);
  const cpu = slices.reduce((n, s) => n + s.cpuUs, 0) / requests;
  if (slices.every((s) => s.samples !== undefined)) {
    const all = slices.flatMap((s) => s.samples!).sort((a, b) => a - b);
    return { rps: requests / seconds, ...percentiles(all), cpu };
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  return {
    rps: requests / seconds,
    cpu,
    p50: median(slices.map((s) => s.p50)),
    p99: median(slices.map((s) => s.p99)),
  };
}

const NAMES = [
  '(a) simulator',
  '(b) bare',
  '(c) proxy',
  '(d) proxy, Messages',
  '(e) proxy, Responses',
  '(f) proxy, Responses store:true',
];

type Row = { rps: number; p50: number; p99: number; cpu: number };

function render(rows: { scenario: string; unit: string; results: Row[] }[], names: string[]): string {
  const f = (n: number, d = 2) => n.toFixed(d);
  const lines = [
    '| scenario | target | req/s | p50 | p99 | x/b req/s | x/a req/s | x−a p50 | x−a p99 | CPU µs/req | x/c req/s | x/c CPU |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const row of rows) {
    const [a, b, c] = row.results as [Row, Row, Row];
    row.results.forEach((x, i) => {
      const proxy = i >= 2;
      const other = i >= 3; // another surface of the proxy, against its chat surface (c)
      lines.push(
        `| ${i === 0 ? `${row.scenario} [${row.unit}]` : ''} | ${names[i]} | ${f(x.rps, 0)} | ${f(x.p50, 3)} | ${f(x.p99, 3)} | ${
          proxy ? f(x.rps / b.rps) : ''
        } | ${proxy ? f(x.rps / a.rps) : ''} | ${proxy ? f(x.p50 - a.p50, 3) : ''} | ${proxy ? f(x.p99 - a.p99, 3) : ''} | ${f(x.cpu, 0)} | ${
          other ? f(x.rps / c.rps) : ''
        } | ${other ? f(x.cpu / c.cpu) : ''} |`,
      );
    });
  }
  return lines.join('\n');
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(async () => {
    await stack?.stop();
    setTimeout(() => process.exit(), 500).unref();
  });
