// A small disk that really fills (ENOSPC from the kernel, not a stubbed fs call): a tmpfs of
// `bytes`, mounted on a fresh directory. Mounting needs root (CAP_SYS_ADMIN); where it is not
// allowed `mountTmpfs` returns null and the test that needs it is skipped, saying why.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Tmpfs {
  dir: string;
  /** Writes a file until the disk is full; returns its path (delete it to free the space). */
  fill(): string;
  /** Resizes the disk to `bytes` (an operator growing the volume), its files kept. */
  grow(bytes: number): void;
  unmount(): void;
}

export function mountTmpfs(bytes: number): Tmpfs | null {
  const dir = mkdtempSync(join(tmpdir(), 'mp-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
  let fillers = 0;
  return {
    dir,
    fill() {
      const file = join(dir, `filler-${++fillers}`);
      const fd = openSync(file, 'w');
      const chunk = Buffer.alloc(1024);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      }
      // The last page may take a few bytes more.
      try {
        for (;;) writeSync(fd, chunk, 0, 1);
      } catch {
        // full
      }
      closeSync(fd);
      return file;
    },
    grow(size) {
      execFileSync('mount', ['-o', `remount,size=${size}`, dir], { stdio: 'ignore' });
    },
    unmount() {
      execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Deletes a filler file (frees its space). */
export const free = (file: string) => unlinkSync(file);
