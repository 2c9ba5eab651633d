// vitest globalSetup: empties the run's log folder before any test, and after the last one scans
// every line the whole run logged for credentials (./log-scan.ts). A finding fails the run: the
// exit code is set and each finding printed (file, line, what — not the secret).
import { mkdirSync, rmSync } from 'node:fs';
import { RUN_LOG_DIR } from '../helpers/run-log.ts';
import { scanLogs } from './log-scan.ts';

export function setup(): () => void {
  rmSync(RUN_LOG_DIR, { recursive: true, force: true });
  mkdirSync(RUN_LOG_DIR, { recursive: true });
  return () => {
    const { findings, lines, files } = scanLogs(RUN_LOG_DIR);
    if (findings.length === 0) {
      console.log(`log scan: ${lines} lines in ${files} files under ${RUN_LOG_DIR}, no credential`);
      return;
    }
    console.error(`log scan: ${findings.length} credential(s) in the run's logs (${RUN_LOG_DIR}):`);
    for (const f of findings.slice(0, 50)) console.error(`  ${f.file}:${f.line}: ${f.what}`);
    process.exitCode = 1;
  };
}
