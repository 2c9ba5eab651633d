// CPU per request of each process (load generator excluded): which process a request's time goes
// to, when the simulator, the pass-through or the proxy is the target. wrk (C, cheap per request)
// drives 32 connections; CPU time comes from /proc/<pid>/stat before and after.
//   npx tsx bench/proxy/cpu.ts            (BENCH_SECONDS=5 per row; BENCH_TARGETS=proxy for the
//                                          proxy only; BENCH_SCENARIO=streaming for one scenario)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuUs } from './proc-cpu.ts';
import { type Stack, startStack, type Target, WARMUP_S } from './stack.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
/** A wrk Lua script that POSTs `body` with `headers`. */
function wrkScript(dir: string, name: string, body: string, headers: Record<string, string>): string {
  const file = join(dir, `${name}.lua`);
  const lines = [
    'wrk.method = "POST"',
    `wrk.body = ${JSON.stringify(body)}`,
    ...Object.entries(headers).map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`),
  ];
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

interface Row {
  target: string;
  rps: number;
  perRequestUs: Record<string, number>;
}

function wrk(target: Target, script: string, seconds: number): number {
  const out = execFileSync('wrk', [
    process.env.BENCH_CONNECTIONS === '1' ? '-t1' : '-t2',
    `-c${process.env.BENCH_CONNECTIONS ?? 32}`,
    `-d${seconds}s`,
    '-s',
    script,
    `${target.url}/v1/chat/completions`,
  ]).toString();
  if (/Non-2xx|Socket errors/.test(out)) throw new Error(`${target.name}: ${out}`);
  const m = /([\d.]+) requests in ([\d.]+)s/.exec(out);
  if (!m) throw new Error(`unreadable wrk output: ${out}`);
  return Number(m[1]);
}

async function main() {
  const stack: Stack = await startStack();
  try {
    const dir = mkdtempSync(join(tmpdir(), 'mp-cpu-'));
    const scripts = {
      'non-streaming': wrkScript(dir, 'plain', stack.plain, stack.headers),
      streaming: wrkScript(dir, 'streamed', stack.streamed, stack.headers),
    };
    const procs = {
      simulator: stack.sim.pid,
      bare: stack.bare.pid,
      proxy: stack.proxy.pid,
      redis: stack.redisPid,
    };
    // Warm-up (JIT, pools, key cache) on both payloads: see WARMUP_S.
    for (const t of [stack.sim, stack.bare, stack.proxy])
      for (const script of Object.values(scripts)) wrk(t, script, WARMUP_S);
    for (const [scenario, script] of Object.entries(scripts)) {
      if (process.env.BENCH_SCENARIO !== undefined && process.env.BENCH_SCENARIO !== scenario) continue;
      const rows: Row[] = [];
      const only = process.env.BENCH_TARGETS;
      for (const t of [stack.sim, stack.bare, stack.proxy]) {
        if (only !== undefined && !t.name.includes(only)) continue;
        const before = Object.fromEntries(Object.entries(procs).map(([k, pid]) => [k, cpuUs(pid)]));
        const requests = wrk(t, script, SECONDS);
        const perRequestUs: Record<string, number> = {};
        for (const [k, pid] of Object.entries(procs)) perRequestUs[k] = (cpuUs(pid) - before[k]!) / requests;
        rows.push({ target: t.name, rps: requests / SECONDS, perRequestUs });
      }
      console.log(`\n${scenario}, 32 connections, wrk ${SECONDS} s — CPU µs per request`);
      console.log(`| target | req/s | ${Object.keys(procs).join(' | ')} |`);
      console.log(
        `|---|---:|${Object.keys(procs)
          .map(() => '---:')
          .join('|')}|`,
      );
      for (const r of rows)
        console.log(
          `| ${r.target} | ${r.rps.toFixed(0)} | ${Object.values(r.perRequestUs)
            .map((v) => v.toFixed(0))
            .join(' | ')} |`,
        );
    }
  } finally {
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
