// The proxy in front of a real engine: llama.cpp's server (the tiny model of the tests,
// test/llamacpp/) against the simulator, in one run. Four targets, taking turns round by round (the
// machine's speed drifts): (a) the simulator directly, (b) the proxy in front of it, (c) llama.cpp
// directly, (d) the proxy in front of it. Reported: the proxy's added latency (p50/p99 of b−a and
// d−c, one connection), its throughput ratio (b/a and d/c, several connections), and each engine's
// own stream frames per second when nothing is in front of it.
//   npx tsx bench/proxy/real-engine.ts    (part of make bench; needs scripts/build-llamacpp.sh's binary)
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { CatalogueStore } from '../../core/catalogue/index.ts';
import { startLlamaServer } from '../../test/llamacpp/server.ts';
import { percentiles, probeLatency } from './latency.ts';
import { MODEL, root, startStack } from './stack.ts';

const LLAMA_MODEL = 'bench/llamacpp';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const SLICE_S = Number(process.env.BENCH_SECONDS ?? 4) / ROUNDS;
const PROBE_MS = Number(process.env.BENCH_PROBE_MS ?? 2000) / ROUNDS;
const CONNECTIONS = 4;
/** Connections an engine closed under a probe (reported: llama-server does now and then). */
let closed = 0;

interface Target {
  name: string;
  url: string;
  model: string;
}

async function main() {
  const stack = await startStack();
  // llama.cpp serves as many requests at once as it has slots: one per connection of the load.
  const llama = await startLlamaServer({ servedName: LLAMA_MODEL, parallel: CONNECTIONS });
  try {
    const redis = new Redis(stack.redisUrl);
    await new CatalogueStore(redis).put({
      id: LLAMA_MODEL,
      kind: 'chat',
      pricing: { USD: { input: '0.15', output: '0.6' } },
      endpoints: [{ url: llama.url }],
      created: 1,
    });
    redis.disconnect();
    const targets: Target[] = [
      { name: '(a) simulator', url: stack.sim.url, model: MODEL },
      { name: '(b) proxy → simulator', url: stack.proxy.url, model: MODEL },
      { name: '(c) llama.cpp', url: llama.url, model: LLAMA_MODEL },
      { name: '(d) proxy → llama.cpp', url: stack.proxy.url, model: LLAMA_MODEL },
    ];
    await until(async () => {
      const res = await fetch(`${stack.proxy.url}/v1/models`, { headers: stack.headers });
      return (await res.text()).includes(LLAMA_MODEL);
    });
    const body = (model: string, stream: boolean) =>
      JSON.stringify({
        model,
        messages: [{ role: 'user', content: 'Say hello to the benchmark in a few words.' }],
        max_tokens: 16,
        ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      });
    const headers = stack.headers;
    const load = async (t: Target, stream: boolean) => {
      const res = await autocannon({
        url: `${t.url}/v1/chat/completions`,
        method: 'POST',
        headers,
        body: body(t.model, stream),
        connections: CONNECTIONS,
        duration: SLICE_S,
      });
      // A failed call is counted and reported with the figures (`failed`), not hidden.
      failed[targets.indexOf(t)]! += res.non2xx + res.errors;
      return { requests: res.requests.total, seconds: res.duration };
    };
    // llama-server closes a keep-alive connection now and then ("other side closed"): the probe
    // starts over on a new connection, keeping the samples it had.
    const probe = async (t: Target, stream: boolean) => {
      const samples: number[] = [];
      const until = performance.now() + PROBE_MS;
      const p = {
        url: t.url,
        path: '/v1/chat/completions',
        body: body(t.model, stream),
        headers,
        firstFrame: stream,
      };
      while (performance.now() < until) {
        try {
          samples.push(...(await probeLatency(p, until - performance.now())).samples);
        } catch (err) {
          // A 5xx is counted as a failed call (reported), like autocannon's non-2xx.
          if (/answered 5\d\d$/.test((err as Error).message)) failed[targets.indexOf(t)]!++;
          else if ((err as { code?: string }).code === 'UND_ERR_SOCKET') closed++;
          else throw err;
        }
      }
      return { samples };
    };

    const failed = targets.map(() => 0);
    for (const t of targets) for (const s of [false, true]) await load(t, s); // warm-up
    const rps = targets.map(() => ({ plain: [0, 0], streamed: [0, 0] }));
    const lat = targets.map(() => ({ plain: [] as number[], ttft: [] as number[] }));
    const frames = [0, 0].map(() => ({ frames: 0, seconds: 0 }));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, t] of targets.entries()) {
        for (const [key, stream] of [
          ['plain', false],
          ['streamed', true],
        ] as const) {
          const s = await load(t, stream);
          rps[i]![key][0]! += s.requests;
          rps[i]![key][1]! += s.seconds;
        }
        lat[i]!.plain.push(...(await probe(t, false)).samples);
        lat[i]!.ttft.push(...(await probe(t, true)).samples);
      }
      // The engines' own frame rate, nothing in front: (a) and (c).
      for (const [k, i] of [0, 2].entries()) {
        const f = await framesPerSecond(targets[i]!, body(targets[i]!.model, true), headers);
        frames[k]!.frames += f.frames;
        frames[k]!.seconds += f.seconds;
      }
      process.stderr.write('.');
    }
    process.stderr.write('\n');

    const f = (n: number, d = 2) => n.toFixed(d);
    const rate = (x: number[]) => x[0]! / x[1]!;
    const lines = [
      '| target | non-stream req/s | stream req/s | p50 ms | p99 ms | TTFT p50 ms | TTFT p99 ms | ratio req/s (stream) | added p50 ms | added p99 ms | added TTFT p50 ms |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ];
    targets.forEach((t, i) => {
      const p = percentiles(lat[i]!.plain.sort((a, b) => a - b));
      const tt = percentiles(lat[i]!.ttft.sort((a, b) => a - b));
      const proxied = i % 2 === 1;
      const base = i - 1;
      const bp = proxied ? percentiles(lat[base]!.plain) : p;
      const bt = proxied ? percentiles(lat[base]!.ttft) : tt;
      lines.push(
        `| ${t.name} | ${f(rate(rps[i]!.plain), 0)} | ${f(rate(rps[i]!.streamed), 0)} | ${f(p.p50, 3)} | ${f(p.p99, 3)} | ${f(tt.p50, 3)} | ${f(tt.p99, 3)} | ${
          proxied
            ? `${f(rate(rps[i]!.plain) / rate(rps[base]!.plain))} (${f(rate(rps[i]!.streamed) / rate(rps[base]!.streamed))})`
            : ''
        } | ${proxied ? f(p.p50 - bp.p50, 3) : ''} | ${proxied ? f(p.p99 - bp.p99, 3) : ''} | ${proxied ? f(tt.p50 - bt.p50, 3) : ''} |`,
      );
    });
    const fps = frames.map((x) => x.frames / x.seconds);
    const table = `${lines.join('\n')}\n\nEngines' own stream frames per second (${CONNECTIONS} streams at once, nothing in front): simulator ${f(fps[0]!, 0)}, llama.cpp ${f(fps[1]!, 0)}. Connections the engines closed under the probes (started over): ${closed}. Failed calls (5xx under load and in the probes): ${targets.map((t, i) => `${t.name} ${failed[i]}`).join(', ')}.`;
    const doc = `# Proxy in front of a real engine\n\nGenerated by \`npx tsx bench/proxy/real-engine.ts\` on ${new Date().toISOString()} (${availableParallelism()} CPUs, shared by the engines, the proxy, Redis and the load generator). llama-server flags: \`${llama.args.join(' ')}\`. Simulator: ttft 0 ms, itl 0 ms. 16 output tokens per call, ${CONNECTIONS} connections for req/s, one for latency.\n\n${table}\n`;
    mkdirSync(`${root}bench/out`, { recursive: true });
    writeFileSync(`${root}bench/out/real-engine.md`, doc);
    console.log(table);
  } finally {
    await llama.stop();
    await stack.stop();
  }
}

/** Streams from one engine on CONNECTIONS connections for a slice, counting `data:` frames. */
async function framesPerSecond(t: Target, body: string, headers: Record<string, string>) {
  const pool = new Pool(t.url, { connections: CONNECTIONS });
  let frames = 0;
  const start = performance.now();
  const worker = async () => {
    while (performance.now() - start < SLICE_S * 1000) {
      try {
        const res = await pool.request({ method: 'POST', path: '/v1/chat/completions', headers, body });
        let tail = '';
        for await (const chunk of res.body) {
          const text = tail + (chunk as Buffer).toString();
          const parts = text.split('\n\n');
          tail = parts.pop() ?? '';
          frames += parts.filter((p) => p.startsWith('data: ') && p !== 'data: [DONE]').length;
        }
      } catch (err) {
        if ((err as { code?: string }).code !== 'UND_ERR_SOCKET') throw err;
        closed++;
      }
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  const seconds = (performance.now() - start) / 1000;
  await pool.close();
  return { frames, seconds };
}

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the proxy never listed the llama.cpp model');
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
