// Stopping a test's programs without leaving their children behind (issue 47.10): the operator's
// local runtime runs its engines as child processes, and test/cluster/ingress.e2e.ts SIGKILLed the
// operator, which cannot pass that on: its simulator kept running after the suite. The real
// operator and simulator here, on a real Redis.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../core/free-port.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { spawnWatched, stopWatched } from './control-plane.ts';

const repo = new URL('../../', import.meta.url).pathname;
let redis: TestRedis;
let dir: string;
beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), 'mp-stop-watched-'));
  writeFileSync(
    join(dir, 'chat.yaml'),
    JSON.stringify({
      apiVersion: 'modelplane.dev/v1alpha1',
      kind: 'Model',
      metadata: { name: 'stop-chat' },
      spec: {
        id: 'Acme/Stop-Chat',
        kind: 'chat',
        engine: { type: 'simulator' },
        pricing: { USD: { input: '0.1', output: '0.2' } },
      },
    }),
  );
}, 60_000);
afterAll(async () => {
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
/** The pids of a process's children (Linux /proc). */
const children = (pid: number) =>
  readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);

async function operatorWithEngine() {
  const p = spawnWatched(
    'operator',
    process.execPath,
    [
      '--import',
      'tsx',
      'operator/main.ts',
      '--runtime',
      'local',
      '--models-dir',
      dir,
      '--port',
      String(await freePort()),
    ],
    { cwd: repo, env: { ...process.env, REDIS_URL: redis.url, LOG_LEVEL: 'warn' } },
    () => true,
  );
  for (let i = 0; i < 600; i++) {
    const [engine] = children(p.pid!);
    if (engine !== undefined) return { p, engine };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the operator started no engine');
}

describe('stopping the test’s programs', () => {
  it('47.10 a SIGKILLed operator leaves its simulator running; stopWatched stops the operator and its simulator', async () => {
    const killed = await operatorWithEngine();
    killed.p.kill('SIGKILL');
    await new Promise((r) => killed.p.once('exit', r));
    await new Promise((r) => setTimeout(r, 500));
    expect(alive(killed.engine)).toBe(true); // the leak the e2e suite had
    process.kill(killed.engine, 'SIGKILL');

    const stopped = await operatorWithEngine();
    await stopWatched([stopped.p]);
    expect(stopped.p.signalCode ?? stopped.p.exitCode).not.toBeNull();
    for (let i = 0; i < 50 && alive(stopped.engine); i++) await new Promise((r) => setTimeout(r, 100));
    expect(alive(stopped.engine)).toBe(false);
  }, 120_000);
});
