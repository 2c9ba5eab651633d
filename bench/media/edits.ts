// Image edits under upload load (issue "Images and videos"): 4 clients each send an edit of 10 ×
// 20 MB files at once, several rounds, while a fifth client measures chat latency on the same
// proxy. Reports the proxy's peak RSS (VmHWM; target < 300 MB: uploads are spooled to disk, never
// held) and the chat latency under upload load as a ratio to the same probe when idle, same run.
//   npx tsx bench/media/edits.ts         (part of `make bench`; ~1 minute; compiled services)
import { readFileSync } from 'node:fs';
import { CatalogueStore } from '../../core/catalogue/index.ts';
import { probeLatency } from '../proxy/latency.ts';
import { startStack } from '../proxy/stack.ts';

const IMAGE_MODEL = 'bench/painter';
const CLIENTS = 4;
const FILES = 10;
const FILE_MB = 20;
const ROUNDS = Number(process.env.BENCH_EDIT_ROUNDS ?? 3);
const PROBE_MS = 4_000;

/** CPU seconds a process has used (user + system), from /proc. */
const cpuOf = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};

const rssOf = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { peakMb: kb('VmHWM') / 1024, nowMb: kb('VmRSS') / 1024 };
};

async function main() {
  const stack = await startStack();
  try {
    const r = await import('ioredis').then((m) => new m.Redis(stack.redisUrl));
    await new CatalogueStore(r).put({
      id: IMAGE_MODEL,
      kind: 'image',
      pricing: { USD: { perImage: '0.01' } },
      capabilities: { edit: true },
      endpoints: [{ url: stack.sim.url }],
      created: 1,
    });
    await new Promise((res) => setTimeout(res, 500)); // the proxy's catalogue snapshot catches up
    r.disconnect();
    const probe = (url = stack.proxy.url) =>
      probeLatency(
        { url, path: '/v1/chat/completions', body: stack.plain, headers: stack.headers, firstFrame: false },
        PROBE_MS / 2,
      );
    await probe(); // warm-up
    await probe(stack.bare.url);
    const idle = await probe();
    // The bare pass-through (another process) under the same load: how much of the slowdown is
    // the machine's two cores being shared, rather than the proxy's own event loop.
    const bareIdle = await probe(stack.bare.url);
    const before = rssOf(stack.proxy.pid);

    // 20 MB that the engine takes for a PNG (its signature, then filler).
    const bytes = new Uint8Array(FILE_MB * 1024 * 1024).fill(7);
    bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const file = new Blob([bytes], { type: 'image/png' });
    const auth = stack.headers.authorization!;
    let edits = 0;
    let failures = 0;
    const client = async () => {
      for (let i = 0; i < ROUNDS; i++) {
        const fd = new FormData();
        fd.set('model', IMAGE_MODEL);
        fd.set('prompt', 'bench');
        for (let f = 0; f < FILES; f++) fd.append('image[]', file, `${f}.png`);
        const res = await fetch(`${stack.proxy.url}/v1/images/edits`, {
          method: 'POST',
          headers: { authorization: auth },
          body: fd,
        });
        const text = await res.text();
        if (res.ok) edits++;
        else {
          failures++;
          if (failures === 1) console.error(`an edit failed: ${res.status} ${text.slice(0, 300)}`);
        }
      }
    };
    const cpu0 = { proxy: cpuOf(stack.proxy.pid), sim: cpuOf(stack.sim.pid), bench: process.cpuUsage() };
    const t0 = performance.now();
    const uploads = Promise.all(Array.from({ length: CLIENTS }, client));
    const loaded = await probe();
    const bareLoaded = await probe(stack.bare.url);
    await uploads;
    const seconds = (performance.now() - t0) / 1000;
    const after = rssOf(stack.proxy.pid);
    const benchCpu = process.cpuUsage(cpu0.bench);
    const cpu = {
      proxy: cpuOf(stack.proxy.pid) - cpu0.proxy,
      sim: cpuOf(stack.sim.pid) - cpu0.sim,
      bench: (benchCpu.user + benchCpu.system) / 1e6,
    };
    const mb = (CLIENTS * ROUNDS * FILES * FILE_MB) / seconds;
    console.log('| measure | value |');
    console.log('| --- | ---: |');
    console.log(
      `| edits (${FILES} × ${FILE_MB} MB each), ${CLIENTS} clients × ${ROUNDS} rounds | ${edits} ok, ${failures} failed, ${seconds.toFixed(1)} s (${mb.toFixed(0)} MB/s uploaded) |`,
    );
    console.log(
      `| proxy peak RSS (VmHWM), whole run | ${after.peakMb.toFixed(0)} MB (before the uploads: ${before.peakMb.toFixed(0)} MB) |`,
    );
    console.log(
      `| CPU during the uploads: proxy / engine / load generator | ${cpu.proxy.toFixed(1)} / ${cpu.sim.toFixed(1)} / ${cpu.bench.toFixed(1)} s of ${seconds.toFixed(1)} s |`,
    );
    console.log(
      `| bare pass-through (another process) p50 / p99 idle → under uploads | ${bareIdle.p50.toFixed(3)} / ${bareIdle.p99.toFixed(3)} → ${bareLoaded.p50.toFixed(3)} / ${bareLoaded.p99.toFixed(3)} ms (×${(bareLoaded.p50 / bareIdle.p50).toFixed(2)} / ×${(bareLoaded.p99 / bareIdle.p99).toFixed(2)}) |`,
    );
    console.log(
      `| chat p50 idle → under uploads | ${idle.p50.toFixed(3)} → ${loaded.p50.toFixed(3)} ms (×${(loaded.p50 / idle.p50).toFixed(2)}) |`,
    );
    console.log(
      `| chat p99 idle → under uploads | ${idle.p99.toFixed(3)} → ${loaded.p99.toFixed(3)} ms (×${(loaded.p99 / idle.p99).toFixed(2)}) |`,
    );
  } finally {
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
