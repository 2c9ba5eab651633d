// vitest globalSetup: one PostgreSQL server per run, started only if a test file asks for one
// (./postgres.ts starts it under a lock in this run's folder, MP_TEST_PG_RUN) and stopped here
// after the last test. Most test files never touch PostgreSQL, so a run that needs none pays nothing.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function setup(): () => Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'mp-pg-run-'));
  process.env.MP_TEST_PG_RUN = dir;
  return async () => {
    const pidFile = join(dir, 'pid');
    if (existsSync(pidFile)) {
      const pid = Number(readFileSync(pidFile, 'utf8'));
      try {
        process.kill(pid, 'SIGINT'); // fast shutdown
        const deadline = Date.now() + 10_000;
        while (Date.now() < deadline && alive(pid)) await new Promise((r) => setTimeout(r, 50));
        if (alive(pid)) process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
