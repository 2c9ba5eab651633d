// Proxy benchmark: the same payloads against (a) the simulator directly, (b) a bare fastify+undici
// pass-through, (c) the full proxy (auth, catalogue, credit hold + settle, metrics), in one run.
// Each server runs in its own process; the load generator runs here. Whole run < 2 minutes.
//   npx tsx bench/proxy/run.ts            (writes bench/out/proxy.md and prints the table; the curated
//                                          history stays in bench/proxy/RESULTS.md and bench/RESULTS.md)
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Accounts } from '../../core/accounts.ts';
import { Metering } from '../../core/billing/index.ts';
import { CatalogueStore } from '../../core/catalogue/index.ts';
import { ApiKeys } from '../../core/keys/index.ts';
import { freePort, startRedis } from '../../test/helpers/redis.ts';
import { type LatencyResult, probeLatency } from './latency.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const MODEL = 'bench/model';
const LOAD_S = Number(process.env.BENCH_SECONDS ?? 5);
const PROBE_MS = Number(process.env.BENCH_PROBE_MS ?? 3000);
const children: ChildProcess[] = [];

function tsx(
  file: string,
  args: string[],
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): ChildProcess {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', file, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  return child;
}

async function waitUp(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`${url} never came up`);
}

let stopRedis: (() => Promise<void>) | undefined;

async function main() {
  const redis = await startRedis();
  stopRedis = () => redis.stop();
  const kek = randomBytes(32).toString('hex');
  const [simPort, barePort, proxyPort] = [await freePort(), await freePort(), await freePort()];
  const sim = `http://127.0.0.1:${simPort}`;
  const r = redis.client();
  await new CatalogueStore(r).put({
    id: MODEL,
    kind: 'chat',
    pricing: { USD: { input: '0.15', cachedInput: '0.075', output: '0.6' } },
    endpoints: [{ url: sim }],
    created: 1,
  });
  const account = await new Accounts(r).create({ name: 'bench', country: 'US' });
  await new Metering(r).topUp({ accountId: account.id, topUpId: 'bench', amount: 5_000_000_000_000_000 });
  const { secret } = await new ApiKeys(r, { brand: 'service', kek: Buffer.from(kek, 'hex') }).create(
    account.id,
    {
      name: 'bench',
    },
  );

  tsx('engines/simulator/main.ts', [
    '--port',
    String(simPort),
    '--ttft-ms',
    '0',
    '--itl-ms',
    '0',
    '--models',
    MODEL,
  ]);
  tsx('bench/proxy/bare.ts', ['--port', String(barePort), '--upstream', sim]);
  tsx(
    'proxy/main.ts',
    [],
    {
      REDIS_URL: redis.url,
      MODELPLANE_KEK: kek,
      PROXY_HOST: '127.0.0.1',
      PROXY_PORT: String(proxyPort),
      LOG_LEVEL: 'warn',
    },
    process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [],
  );
  const targets = [
    { name: '(a) simulator', url: sim },
    { name: '(b) bare pass-through', url: `http://127.0.0.1:${barePort}` },
    { name: '(c) full proxy', url: `http://127.0.0.1:${proxyPort}` },
  ];
  await Promise.all(targets.map((t) => waitUp(`${t.url}/v1/models`)));

  const headers = { 'content-type': 'application/json', authorization: `Bearer ${secret}` };
  const messages = [{ role: 'user', content: 'Say hello to the benchmark in a few words.' }];
  const plain = JSON.stringify({ model: MODEL, messages, max_tokens: 16 });
  const streamed = JSON.stringify({
    model: MODEL,
    messages,
    max_tokens: 16,
    stream: true,
    stream_options: { include_usage: true },
  });

  const load = async (url: string, body: string, connections: number, seconds: number) => {
    const res = await autocannon({
      url: `${url}/v1/chat/completions`,
      method: 'POST',
      headers,
      body,
      connections,
      duration: seconds,
    });
    if (res.non2xx > 0 || res.errors > 0)
      throw new Error(`${url}: ${res.non2xx} non-2xx, ${res.errors} errors`);
    return { rps: res.requests.average, p50: res.latency.p50, p99: res.latency.p99 };
  };
  const probe = (url: string, body: string, firstFrame: boolean) =>
    probeLatency({ url, path: '/v1/chat/completions', body, headers, firstFrame }, PROBE_MS);

  // Warm-up: JIT, keep-alive pools, the proxy's key cache.
  for (const t of targets) await load(t.url, plain, 8, 1);

  type Row = { rps: number; p50: number; p99: number };
  const rows: { scenario: string; unit: string; results: Row[] }[] = [];
  const run = async (scenario: string, unit: string, f: (url: string) => Promise<Row | LatencyResult>) => {
    const results: Row[] = [];
    for (const t of targets) {
      results.push(await f(t.url));
      process.stderr.write('.');
    }
    rows.push({ scenario, unit, results });
  };
  await run('non-streaming, 32 connections', 'ms (autocannon)', (u) => load(u, plain, 32, LOAD_S));
  await run('streaming, 32 connections (whole stream)', 'ms (autocannon)', (u) =>
    load(u, streamed, 32, LOAD_S),
  );
  await run('non-streaming, 1 connection', 'ms', (u) => probe(u, plain, false));
  await run('streaming TTFT, 1 connection', 'ms to first frame', (u) => probe(u, streamed, true));
  process.stderr.write('\n');

  const table = render(rows);
  const doc = `# Proxy benchmark\n\nGenerated by \`npx tsx bench/proxy/run.ts\` on ${new Date().toISOString()} (${availableParallelism()} CPUs; simulator, bare pass-through, proxy and load generator share them). Simulator: ttft 0 ms, itl 0 ms, 16 output tokens. Bare pass-through: fastify + undici, no auth, no billing, no frame parsing. Full proxy: cached key lookup, catalogue, credit hold (concurrent reserve) and settlement, usage frames parsed, metrics.\n\n${table}\n`;
  mkdirSync(`${root}bench/out`, { recursive: true });
  writeFileSync(`${root}bench/out/proxy.md`, doc);
  console.log(table);
}

function render(
  rows: { scenario: string; unit: string; results: { rps: number; p50: number; p99: number }[] }[],
): string {
  const f = (n: number, d = 2) => n.toFixed(d);
  const lines = [
    '| scenario | target | req/s | p50 | p99 | c/b req/s | c/a req/s | c−a p50 | c−a p99 |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const names = ['(a) simulator', '(b) bare', '(c) proxy'];
  for (const row of rows) {
    const [a, b, c] = row.results as [
      (typeof row.results)[0],
      (typeof row.results)[0],
      (typeof row.results)[0],
    ];
    row.results.forEach((x, i) => {
      const last = i === 2;
      lines.push(
        `| ${i === 0 ? `${row.scenario} [${row.unit}]` : ''} | ${names[i]} | ${f(x.rps, 0)} | ${f(x.p50, 3)} | ${f(x.p99, 3)} | ${
          last ? f(c.rps / b.rps) : ''
        } | ${last ? f(c.rps / a.rps) : ''} | ${last ? f(c.p50 - a.p50, 3) : ''} | ${last ? f(c.p99 - a.p99, 3) : ''} |`,
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
    for (const c of children) c.kill('SIGTERM');
    await stopRedis?.().catch(() => {});
    setTimeout(() => process.exit(), 500).unref();
  });
