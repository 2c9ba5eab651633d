// vitest globalSetup: gives the run a log folder of its own (.data/test-logs/<run>, passed to the
// test workers in MP_RUN_LOG_DIR, so two runs in one checkout do not read or clear each other's
// lines) and, after the last test, scans every line the whole run logged for credentials
// (./log-scan.ts). A finding fails the run: the exit code is set, each finding is printed (file,
// line, what — not the secret) and the folder is kept to look at; a clean run's folder is removed.
import { mkdirSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { scanLogs } from './log-scan.ts';

export function setup(): () => void {
  const dir = resolve(
    '.data/test-logs',
    `run-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`,
  );
  mkdirSync(dir, { recursive: true });
  process.env.MP_RUN_LOG_DIR = dir;
  return () => {
    const { findings, lines, files } = scanLogs(dir);
    if (findings.length === 0) {
      console.log(`log scan: ${lines} lines in ${files} files, no credential`);
      rmSync(dir, { recursive: true, force: true });
      return;
    }
    console.error(`log scan: ${findings.length} credential(s) in the run's logs (${dir}):`);
    for (const f of findings.slice(0, 50)) console.error(`  ${f.file}:${f.line}: ${f.what}`);
    process.exitCode = 1;
  };
}
