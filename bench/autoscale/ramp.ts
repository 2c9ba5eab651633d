// Autoscaling under a load ramp (issue 32 "Done means"): the proxy (buildProxyApp, as in the
// tests) and the local runtime with its scaler, engines being simulator processes that take a
// real start delay (START_S of "weights loading" before the simulator itself starts). The ramp —
// up, a plateau, down, idle until the model is at zero, then one cold call — runs against an
// autoscaled model (0..3 replicas), and its load phases against a fixed fleet of 3 in the same
// run. Prints replicas over time, time-to-first-token percentiles per phase (queue wait inside the
// engines included: a simulator replica generates 4 calls at once, the rest wait), the cold call's
// total time, and replica-seconds against the fixed fleet's over the same wall time.
//   npx tsx bench/autoscale/ramp.ts          (~2 min)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { stringify } from 'yaml';
import { CatalogueStore } from '../../core/catalogue/store.ts';
import { DemandStore } from '../../core/demand/demand.ts';
import { LocalRuntime } from '../../operator/local/runtime.ts';
import { CatalogueWriter } from '../../operator/runtime/catalogue-writer.ts';
import { startHarness } from '../../test/proxy/harness.ts';

const START_S = Number(process.env.START_S ?? 3);
const SERVED = 'Bench/Model';
const phases = [
  { name: 'up 1', clients: 1, s: 8 },
  { name: 'up 4', clients: 4, s: 8 },
  { name: 'plateau 10', clients: 10, s: 15 },
  { name: 'down 3', clients: 3, s: 8 },
];
const repo = resolve(import.meta.dirname, '..', '..');

const quantile = (xs: number[], q: number) => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function modelFile(dir: string, name: string, id: string, engine: Record<string, unknown>): string {
  const file = join(dir, `${name}.yaml`);
  const sim = `sleep ${START_S}; exec ${process.execPath} --import tsx engines/simulator/main.ts --host {host} --port {port} --models ${SERVED} --ttft-ms 40 --itl-ms 8 --max-concurrency 4`;
  writeFileSync(
    file,
    stringify({
      apiVersion: 'modelplane.dev/v1alpha1',
      kind: 'Model',
      metadata: { name },
      spec: {
        id,
        kind: 'chat',
        servedName: SERVED,
        pricing: { USD: { input: '0.1', output: '0.2' } },
        engine: { type: 'custom', image: 'unused-locally', command: ['sh', '-c', sim], ...engine },
      },
    }),
  );
  return file;
}

async function main() {
  const h = await startHarness({ PROXY_DEMAND_PUBLISH_MS: '250', LOG_LEVEL: 'silent' });
  const dir = mkdtempSync(join(tmpdir(), 'mp-bench-autoscale-'));
  const auto = modelFile(dir, 'auto', 'Bench/Autoscaled', {
    minReplicas: 0,
    maxReplicas: 3,
    autoscaling: {
      targetInFlight: 4,
      scaleDownDelaySeconds: 5,
      windowSeconds: 5,
      idleSeconds: 8,
      coldStartTimeoutSeconds: 120,
    },
  });
  // The fixed fleet the autoscaled one is measured against: written, then read by the runtime.
  modelFile(dir, 'fixed', 'Bench/Fixed', { replicas: 3 });
  const runtime = new LocalRuntime(
    {
      catalogue: new CatalogueWriter(new CatalogueStore(h.redis.client())),
      log: pino({ level: 'silent' }),
      demand: new DemandStore(h.redis.client()),
      scaleIntervalMs: 500,
    },
    { dir, cwd: repo, rescanMs: 1_000 },
  );
  await runtime.start();
  const store = new CatalogueStore(h.redis.client());
  for (;;) {
    if (((await store.get('Bench/Fixed'))?.endpoints.length ?? 0) === 3) break;
    await sleep(200);
  }

  /** One streamed call: time to the first content and in all (ms). */
  const call = async (model: string) => {
    const started = performance.now();
    const res = await fetch(`${h.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        messages: [{ role: 'user', content: 'count' }],
        max_tokens: 24,
        stream: true,
      }),
    });
    let ttft = Number.NaN;
    const reader = res.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (Number.isNaN(ttft) && new TextDecoder().decode(value).includes('"content"'))
        ttft = performance.now() - started;
    }
    return { ok: res.status === 200, ttft, total: performance.now() - started };
  };

  const t0 = performance.now();
  const timeline: { t: number; running: number; ready: number }[] = [];
  const sampler = setInterval(() => {
    const ps = runtime.engines(auto);
    timeline.push({
      t: (performance.now() - t0) / 1000,
      running: ps.length,
      ready: ps.filter((p) => p.ready).length,
    });
  }, 250);

  const ramp = async (model: string) => {
    const rows: { phase: string; n: number; failed: number; p50: number; p90: number; p99: number }[] = [];
    for (const phase of phases) {
      const ttfts: number[] = [];
      let failed = 0;
      const until = performance.now() + phase.s * 1000;
      await Promise.all(
        Array.from({ length: phase.clients }, async () => {
          while (performance.now() < until) {
            const r = await call(model);
            if (r.ok) ttfts.push(r.ttft);
            else failed++;
          }
        }),
      );
      rows.push({
        phase: phase.name,
        n: ttfts.length,
        failed,
        p50: quantile(ttfts, 0.5),
        p90: quantile(ttfts, 0.9),
        p99: quantile(ttfts, 0.99),
      });
    }
    return rows;
  };

  const autoRows = await ramp('Bench/Autoscaled');
  const loadEnd = (performance.now() - t0) / 1000;
  // Idle until the scaler has put the model to sleep.
  while (runtime.engines(auto).length > 0) await sleep(250);
  const zeroAt = (performance.now() - t0) / 1000;
  await sleep(2_000);
  const cold = await call('Bench/Autoscaled');
  const end = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  const fixedRows = await ramp('Bench/Fixed');

  let replicaSeconds = 0;
  for (let i = 1; i < timeline.length; i++)
    replicaSeconds += timeline[i - 1]!.running * (timeline[i]!.t - timeline[i - 1]!.t);
  const fixedReplicaSeconds = 3 * end;

  const f = (n: number) => (Number.isNaN(n) ? '–' : n.toFixed(0));
  console.log(
    `\nEngine start delay ${START_S} s + the simulator's own start; scaler every 0.5 s, demand published every 0.25 s.\n`,
  );
  console.log(
    '| phase | clients | autoscaled: calls | TTFT p50 / p90 / p99 ms | fixed 3: calls | TTFT p50 / p90 / p99 ms |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  phases.forEach((p, i) => {
    const a = autoRows[i]!;
    const x = fixedRows[i]!;
    console.log(
      `| ${p.name} | ${p.clients} | ${a.n}${a.failed ? ` (${a.failed} failed)` : ''} | ${f(a.p50)} / ${f(a.p90)} / ${f(a.p99)} | ${x.n}${x.failed ? ` (${x.failed} failed)` : ''} | ${f(x.p50)} / ${f(x.p90)} / ${f(x.p99)} |`,
    );
  });
  console.log('\nReplicas (running processes, ready) over time, every second:\n');
  const perSecond = timeline.filter((x, i) => i === 0 || Math.floor(x.t) !== Math.floor(timeline[i - 1]!.t));
  console.log(perSecond.map((x) => `${Math.floor(x.t)}s:${x.running}/${x.ready}`).join(' '));
  console.log(
    `\nLoad ended at ${loadEnd.toFixed(1)} s; at zero at ${zeroAt.toFixed(1)} s; cold call: TTFT ${f(cold.ttft)} ms, total ${f(cold.total)} ms (${cold.ok ? 'answered' : 'FAILED'}).`,
  );
  console.log(
    `Replica-seconds over ${end.toFixed(1)} s: autoscaled ${replicaSeconds.toFixed(0)}, fixed fleet of 3 ${fixedReplicaSeconds.toFixed(0)} (${((100 * replicaSeconds) / fixedReplicaSeconds).toFixed(0)} %).`,
  );

  await runtime.stop();
  await h.stop();
  rmSync(dir, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
