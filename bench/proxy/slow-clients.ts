// Slow and idle clients against the compiled proxy (issue "Hardening"): the chat latency of a
// normal client at one connection, idle, then with 500 idle keep-alive connections and a stream
// whose reader stopped reading held open beside it, as a ratio in the same run; and the proxy's
// resident memory at each step (what 500 idle connections cost, what the stalled stream costs)
// and its peak.
//   npx tsx bench/proxy/slow-clients.ts      (part of `make bench`; ~30 s)
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { probeLatency } from './latency.ts';
import { startStack } from './stack.ts';

const IDLE = 500;
const PROBE_MS = 4_000;

/** MB of the process's resident memory now (VmRSS) or at its peak (VmHWM). */
const memory = (pid: number, field: 'VmRSS' | 'VmHWM') =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) /
  1024;

async function main() {
  const stack = await startStack({ proxyEnv: { PROXY_STREAM_STALL_MS: '600000' } });
  const url = new URL(stack.proxy.url);
  const sockets: Socket[] = [];
  try {
    const probe = () =>
      probeLatency(
        {
          url: stack.proxy.url,
          path: '/v1/chat/completions',
          body: stack.plain,
          headers: stack.headers,
          firstFrame: false,
        },
        PROBE_MS,
      );
    await probe(); // warm-up
    const idle = await probe();
    const pid = stack.proxy.pid;
    const rssIdle = memory(pid, 'VmRSS');
    const peakIdle = memory(pid, 'VmHWM');

    // 500 keep-alive connections, each after one request, then silent.
    const request = `GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: ${stack.headers.authorization}\r\n\r\n`;
    await Promise.all(
      Array.from(
        { length: IDLE },
        () =>
          new Promise<void>((resolve, reject) => {
            const s = connect(Number(url.port), url.hostname, () => s.write(request));
            s.once('data', () => resolve());
            s.on('error', reject);
            sockets.push(s);
          }),
      ),
    );
    await new Promise((r) => setTimeout(r, 500));
    const rssConnections = memory(pid, 'VmRSS');
    // A stream whose reader stops reading (the proxy holds it until PROXY_STREAM_STALL_MS).
    const body = JSON.stringify({
      model: JSON.parse(stack.plain).model,
      messages: [{ role: 'user', content: 'long' }],
      max_tokens: 100_000,
      ignore_eos: true,
      stream: true,
    });
    const stalled = connect(Number(url.port), url.hostname, () =>
      stalled.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: ${stack.headers.authorization}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      ),
    );
    stalled.on('error', () => {});
    sockets.push(stalled);
    await new Promise((r) => setTimeout(r, 300));
    stalled.pause();
    await new Promise((r) => setTimeout(r, 1_000));
    const rssStalled = memory(pid, 'VmRSS');
    const loaded = await probe();
    const rssLoaded = memory(pid, 'VmRSS');
    const peakLoaded = memory(pid, 'VmHWM');
    console.log('| measure | idle | 500 idle connections + a stalled reader | ratio |');
    console.log('| --- | ---: | ---: | ---: |');
    console.log(
      `| chat p50 at one connection | ${idle.p50.toFixed(3)} ms | ${loaded.p50.toFixed(3)} ms | ×${(loaded.p50 / idle.p50).toFixed(2)} |`,
    );
    console.log(
      `| chat p99 at one connection | ${idle.p99.toFixed(3)} ms | ${loaded.p99.toFixed(3)} ms | ×${(loaded.p99 / idle.p99).toFixed(2)} |`,
    );
    console.log(`| proxy peak RSS (VmHWM) | ${peakIdle.toFixed(0)} MB | ${peakLoaded.toFixed(0)} MB | |`);
    console.log();
    console.log('| proxy RSS (VmRSS) | MB |');
    console.log('| --- | ---: |');
    console.log(`| after the idle probe | ${rssIdle.toFixed(1)} |`);
    console.log(
      `| + ${IDLE} idle connections | ${rssConnections.toFixed(1)} (${(((rssConnections - rssIdle) * 1024) / IDLE).toFixed(1)} KB each) |`,
    );
    console.log(`| + the stalled stream | ${rssStalled.toFixed(1)} |`);
    console.log(`| after the loaded probe | ${rssLoaded.toFixed(1)} |`);
  } finally {
    for (const s of sockets) s.destroy();
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
