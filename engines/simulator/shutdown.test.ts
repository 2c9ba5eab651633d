// The simulator stops as vLLM does with --shutdown-timeout: SIGTERM → new requests refused (a 503
// or a refused connection, both failed over by the proxy before any byte), in-flight streams
// finish whole, then the process exits; past the timeout what is left is cut.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../core/free-port.ts';
import { startSimulator } from './server.ts';

const body = (maxTokens: number) =>
  JSON.stringify({
    model: 'm',
    stream: true,
    max_tokens: maxTokens,
    messages: [{ role: 'user', content: 'hi' }],
  });

async function stream(url: string, maxTokens: number): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body(maxTokens),
  });
  try {
    return { status: res.status, text: await res.text() };
  } catch {
    return { status: res.status, text: '(cut)' };
  }
}

const refused = async (url: string) => {
  try {
    return (await stream(url, 1)).status;
  } catch {
    return 'refused';
  }
};

let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill('SIGKILL');
  child = undefined;
});

describe('simulator shutdown (vLLM --shutdown-timeout)', () => {
  it('refuses new requests, finishes every in-flight stream, then closes', async () => {
    const sim = await startSimulator({ ttftMs: 10, itlMs: 20 });
    const streams = Array.from({ length: 5 }, () => stream(sim.url, 25));
    await expect.poll(() => sim.inFlight()).toBe(5);
    const stopped = sim.shutdown(30_000);
    expect(await refused(sim.url)).toSatisfy((s) => s === 503 || s === 'refused');
    for (const s of await Promise.all(streams)) {
      expect(s.status).toBe(200);
      expect(s.text.trim().endsWith('data: [DONE]')).toBe(true);
    }
    await stopped;
    expect(sim.inFlight()).toBe(0);
  });

  it('past the timeout, what is still streaming is cut', async () => {
    const sim = await startSimulator({ ttftMs: 10, itlMs: 50 });
    const long = stream(sim.url, 10_000);
    await expect.poll(() => sim.inFlight()).toBe(1);
    await sim.shutdown(100);
    expect((await long).text.includes('[DONE]')).toBe(false);
  });

  it('the CLI: SIGTERM with --shutdown-timeout lets a live stream finish before the process exits', async () => {
    const port = await freePort();
    child = spawn(
      process.execPath,
      ['--import', 'tsx', 'engines/simulator/main.ts', '--port', String(port), '--itl-ms', '20'].concat(
        '--shutdown-timeout',
        '30',
      ),
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await once(child.stdout!, 'data');
    const url = `http://127.0.0.1:${port}`;
    const live = stream(url, 50);
    await new Promise((r) => setTimeout(r, 200));
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const done = await live;
    expect(done.text.trim().endsWith('data: [DONE]')).toBe(true);
    const [code] = await exited;
    expect(code).toBe(0);
  });
});
