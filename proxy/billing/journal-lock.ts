// One process per data directory: two proxies appending to one journal would each replay and
// resend the other's settlements. A lock file holds the owner's pid; a dead owner's lock is taken over.
import { existsSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Data directories opened by this process (a second app in one process must not share one). */
const openDirs = new Set<string>();

export function lockDir(dir: string): void {
  const lock = join(dir, 'outbox.lock');
  if (openDirs.has(dir)) throw new Error(`the data directory ${dir} is already in use by this process`);
  if (existsSync(lock)) {
    const pid = Number(readFileSync(lock, 'utf8').trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
      throw new Error(
        `the data directory ${dir} belongs to the running process ${pid}; give each proxy its own PROXY_DATA_DIR`,
      );
    }
  }
  writeFileSync(lock, String(process.pid));
  openDirs.add(dir);
}

export function unlockDir(dir: string): void {
  openDirs.delete(dir);
  try {
    unlinkSync(join(dir, 'outbox.lock'));
  } catch {
    // already gone
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
