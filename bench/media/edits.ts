// Image edits under upload load (issue "Images and videos"): 4 clients each send an edit of 10 ×
// 20 MB files at once, several rounds, while a fifth client measures chat latency on the same
// proxy. Reports the proxy's peak RSS (VmHWM; target < 300 MB: uploads are spooled to disk, never
// held) and the chat latency under upload load as a ratio to the same probe when idle, same run.
// The uploads are sent by a child process, so building 2.4 GB of multipart does not stall the
// probe's own event loop; with BENCH_PIN=1 (the default where taskset exists) the proxy, the probe
// and the bare pass-through (the control) share CPU 0 and the engine, Redis and the uploader CPU 1,
// so what is measured is the proxy's own handling of the uploads, not the machine's two cores
// being oversubscribed by the engine and the load generator.
//   npx tsx bench/media/edits.ts         (part of `make bench`; ~1 minute; compiled services)
import { execFileSync, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { CatalogueStore } from '../../core/catalogue/index.ts';
import { connectRedis } from '../../core/redis/client.ts';
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

/** The uploader (a child process): every client's rounds of edits; reports how many succeeded. */
async function uploader(url: string, auth: string) {
  // 20 MB that the engine takes for a PNG (its signature, then filler).
  const bytes = new Uint8Array(FILE_MB * 1024 * 1024).fill(7);
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const file = new Blob([bytes], { type: 'image/png' });
  let edits = 0;
  let failures = 0;
  const client = async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const fd = new FormData();
      fd.set('model', IMAGE_MODEL);
      fd.set('prompt', 'bench');
      for (let f = 0; f < FILES; f++) fd.append('image[]', file, `${f}.png`);
      const res = await fetch(`${url}/v1/images/edits`, {
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
  process.send!('ready');
  await new Promise((go) => process.once('message', go));
  await Promise.all(Array.from({ length: CLIENTS }, client));
  process.send!({ edits, failures });
}

/** Pins a process (all its threads) to one CPU. */
const pin = (pid: number, cpu: number) =>
  execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)]);

async function main() {
  const stack = await startStack();
  try {
    const r = connectRedis(stack.redisUrl);
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

    const auth = stack.headers.authorization!;
    const child = fork(process.argv[1]!, ['--uploader', stack.proxy.url, auth], {
      execArgv: process.execArgv,
    });
    await new Promise((ready) => child.once('message', ready));
    const pinned = process.env.BENCH_PIN !== '0' && availableParallelism() >= 2 && hasTaskset();
    if (pinned) {
      for (const pid of [stack.proxy.pid, stack.bare.pid, process.pid]) pin(pid, 0);
      for (const pid of [stack.sim.pid, stack.redisPid, child.pid!]) pin(pid, 1);
    }
    const probeIdle = async () => ({ proxy: await probe(), bare: await probe(stack.bare.url) });
    const idlePinned = pinned ? await probeIdle() : null;
    const done = new Promise<{ edits: number; failures: number }>((res) => child.once('message', res));
    const cpu0 = { proxy: cpuOf(stack.proxy.pid), sim: cpuOf(stack.sim.pid), bench: cpuOf(child.pid!) };
    const t0 = performance.now();
    child.send('go');
    const loaded = await probe();
    const bareLoaded = await probe(stack.bare.url);
    const { edits, failures } = await done;
    const seconds = (performance.now() - t0) / 1000;
    const after = rssOf(stack.proxy.pid);
    const cpu = {
      proxy: cpuOf(stack.proxy.pid) - cpu0.proxy,
      sim: cpuOf(stack.sim.pid) - cpu0.sim,
      bench: cpuOf(child.pid!) - cpu0.bench,
    };
    // Pinned, the idle figures are the ones measured pinned (the same placement as under load).
    const base = idlePinned ?? { proxy: idle, bare: bareIdle };
    const mb = (CLIENTS * ROUNDS * FILES * FILE_MB) / seconds;
    console.log(
      pinned ? 'Pinned: proxy, probe and bare on CPU 0; engine, Redis, uploader on CPU 1.' : 'Not pinned.',
    );
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
      `| bare pass-through (another process) p50 / p99 idle → under uploads | ${base.bare.p50.toFixed(3)} / ${base.bare.p99.toFixed(3)} → ${bareLoaded.p50.toFixed(3)} / ${bareLoaded.p99.toFixed(3)} ms (×${(bareLoaded.p50 / base.bare.p50).toFixed(2)} / ×${(bareLoaded.p99 / base.bare.p99).toFixed(2)}) |`,
    );
    console.log(
      `| chat p50 idle → under uploads | ${base.proxy.p50.toFixed(3)} → ${loaded.p50.toFixed(3)} ms (×${(loaded.p50 / base.proxy.p50).toFixed(2)}) |`,
    );
    console.log(
      `| chat p99 idle → under uploads | ${base.proxy.p99.toFixed(3)} → ${loaded.p99.toFixed(3)} ms (×${(loaded.p99 / base.proxy.p99).toFixed(2)}) |`,
    );
  } finally {
    await stack.stop();
  }
}

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const [mode, url, auth] = process.argv.slice(2);
(mode === '--uploader' ? uploader(url!, auth!) : main())
  .then(() => {
    if (mode === '--uploader') process.disconnect();
  })
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
