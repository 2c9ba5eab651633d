// `make dev` when a part fails to start (issue 19, item 8): the start fails naming the part and
// what it said, and every part already started is stopped — no Redis, operator, console or engine
// is left running without a parent, holding its port, to make the next `make dev` fail too.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../core/free-port.ts';
import { until } from '../test/helpers/until.ts';
import { startPlatform } from './platform.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Processes whose environment carries `mark` (every part, and the engines the operator starts). */
function marked(mark: string): number[] {
  const pids: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readFileSync(`/proc/${p}/environ`, 'latin1').includes(mark)) pids.push(Number(p));
    } catch {
      // gone, or not ours
    }
  }
  return pids;
}

const canListen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

describe('make dev with a part that cannot start', () => {
  it('the proxy cannot listen: the start fails naming the proxy and why, and every part it started is stopped', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mp-dev-fail-'));
    dirs.push(dataDir);
    const mark = `MP_DEV_FAIL_${randomBytes(6).toString('hex')}`;
    const [redisPort, proxyPort, consolePort, operatorPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    // Another process holds the proxy's port.
    const squatter: Server = createServer((s) => s.destroy());
    await new Promise<void>((r) => squatter.listen(proxyPort, r));
    const exits: string[] = [];
    try {
      const err = await startPlatform({
        dataDir,
        modelsDir: 'examples/models',
        redisPort,
        proxyPort,
        consolePort,
        operatorPort,
        env: { [mark]: '1' },
        log: (l) => process.env.DEV_FAIL_DEBUG && console.log(l),
        onExit: (name) => exits.push(name),
      }).then(
        () => new Error('the platform started'),
        (e: Error) => e,
      );
      expect(err.message).toMatch(/^the proxy exited with code \d+ while the platform was starting:/);
      expect(err.message).toMatch(/EADDRINUSE/);
      // Nothing of it is left: no process, no port held (the proxy's is still the squatter's).
      // (The engines are the operator's children: given a few seconds to go after it.)
      await until(() => marked(mark).length === 0, 'every part and engine gone', 20_000);
      for (const port of [redisPort, consolePort, operatorPort])
        expect([port, await canListen(port)]).toEqual([port, true]);
      expect(exits).toEqual([]); // a failed start is reported by the rejection, not by onExit
    } finally {
      await new Promise((r) => squatter.close(r));
    }
  }, 120_000);
});
