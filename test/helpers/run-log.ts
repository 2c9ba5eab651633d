// Every log line the test run writes goes to the run's folder (made by
// test/security/global-log-scan.ts, which passes it in MP_RUN_LOG_DIR), and every secret a harness
// makes is noted beside it, so the run's last step can read all its logs and fail the run if a
// credential is in any line (issue 24: API keys, session ids, invitation tokens, Stripe and service
// secrets, signatures).
import { appendFileSync, closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { Writable } from 'node:stream';

/** The run's log folder (a file run without the global setup, e.g. from an editor: .data/test-logs/loose). */
export const RUN_LOG_DIR = resolve(process.env.MP_RUN_LOG_DIR ?? '.data/test-logs/loose');
const SECRETS_FILE = 'secrets';

let seq = 0;

/**
 * A stream for a server's log lines in the run's folder. Writes are synchronous, so a test worker
 * that exits right after its last request loses no line.
 */
export function runLogStream(name: string): Writable {
  mkdirSync(RUN_LOG_DIR, { recursive: true });
  const fd = openSync(resolve(RUN_LOG_DIR, `${name}-${process.pid}-${seq++}.log`), 'a');
  return new Writable({
    write(chunk, _enc, done) {
      writeSync(fd, chunk);
      done();
    },
    final(done) {
      closeSync(fd);
      done();
    },
  });
}

/** Notes secrets a harness made, so the final scan looks for each of them too. */
export function registerSecrets(...secrets: (string | undefined | null)[]): void {
  const lines = secrets.filter((s): s is string => typeof s === 'string' && s.length >= 12);
  if (lines.length === 0) return;
  mkdirSync(RUN_LOG_DIR, { recursive: true });
  appendFileSync(resolve(RUN_LOG_DIR, `${SECRETS_FILE}-${process.pid}.txt`), `${lines.join('\n')}\n`);
}
