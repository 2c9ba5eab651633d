// The credential scan over a folder of log files (test/helpers/run-log.ts writes them): shapes no
// log line may hold, and the exact secrets the run's harnesses noted. Findings name the file, the
// line and what was found, never the whole secret.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Credential shapes, whoever made them. */
export const CREDENTIAL_SHAPES: { what: string; pattern: RegExp }[] = [
  { what: 'an API key', pattern: /sk-[a-z0-9]{1,32}-[0-9a-f]{48}/ },
  { what: 'a Stripe secret or restricted key', pattern: /\b[sr]k_(?:test|live)_[A-Za-z0-9]{4,}/ },
  { what: 'a Stripe webhook secret', pattern: /whsec_[A-Za-z0-9+/=_-]{8,}/ },
  { what: 'a signed-link signature', pattern: /[?&]sig=(?!\[redacted\])[A-Za-z0-9_-]{16,}/ },
  {
    what: 'an invitation token',
    pattern: /\/invit(?:e|ations)\/(?!\[redacted\]|accept\b)[A-Za-z0-9_-]{32}\b/,
  },
  { what: 'a session cookie', pattern: /mp_session=[A-Za-z0-9_-]{20,}/ },
  { what: 'a bearer token', pattern: /Bearer [A-Za-z0-9._~+/-]{20,}/ },
];

export interface Finding {
  file: string;
  line: number;
  what: string;
}

/** Every credential in the folder's *.log files: by shape, and each noted secret verbatim. */
export function scanLogs(dir: string): { findings: Finding[]; lines: number; files: number } {
  if (!existsSync(dir)) return { findings: [], lines: 0, files: 0 };
  const names = readdirSync(dir);
  const secrets = new Set<string>();
  for (const n of names.filter((n) => n.startsWith('secrets-')))
    for (const s of readFileSync(join(dir, n), 'utf8').split('\n')) if (s.length >= 12) secrets.add(s);
  const findings: Finding[] = [];
  let lines = 0;
  const logs = names.filter((n) => n.endsWith('.log'));
  for (const n of logs) {
    readFileSync(join(dir, n), 'utf8')
      .split('\n')
      .forEach((text, i) => {
        if (text === '') return;
        lines++;
        for (const { what, pattern } of CREDENTIAL_SHAPES)
          if (pattern.test(text)) findings.push({ file: n, line: i + 1, what });
        for (const s of secrets)
          if (text.includes(s))
            findings.push({ file: n, line: i + 1, what: `a secret the run made (${s.slice(0, 6)}…)` });
      });
  }
  return { findings, lines, files: logs.length };
}
