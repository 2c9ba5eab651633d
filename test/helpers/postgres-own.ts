// A PostgreSQL server of a test file's own (not the run's shared one), for tests that freeze it:
// SIGSTOP to the server and every backend it forked, so open connections stay open and nothing
// answers — a hung database, as a partition that resets nothing or a stuck host gives.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from '../../cli/postgres-server.ts';
import { freePort } from '../../core/free-port.ts';

export interface OwnPostgres {
  url: string;
  freeze(): void;
  thaw(): void;
  stop(): Promise<void>;
}

export async function startOwnPostgres(): Promise<OwnPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'mp-pg-own-'));
  chmodSync(dir, 0o755); // as root the server runs as another user, who must enter this folder
  const server = await startPostgres({ dataDir: join(dir, 'data'), port: await freePort(), throwaway: true });
  const signal = (sig: 'SIGSTOP' | 'SIGCONT') => {
    const pid = server.child.pid!;
    let children: number[] = [];
    try {
      children = execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .map(Number);
    } catch {
      // none
    }
    for (const p of [pid, ...children]) {
      try {
        process.kill(p, sig);
      } catch (err) {
        // A backend whose connection closed between pgrep and now has already exited: nothing to
        // freeze or thaw (seen in CI on a loaded machine).
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      }
    }
  };
  return {
    url: server.url,
    freeze: () => signal('SIGSTOP'),
    thaw: () => signal('SIGCONT'),
    async stop() {
      signal('SIGCONT');
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
