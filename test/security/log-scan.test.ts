// The run's final credential scan (./global-log-scan.ts) can fail: each credential shape in a log
// line is found, a noted secret is found verbatim, and what the servers write instead (masked
// paths, redacted queries and headers) passes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { redactConsoleUrl } from '../../console/request-log.ts';
import { redactQuery } from '../../http/redact-url.ts';
import { scanLogs } from './log-scan.ts';

const dir = mkdtempSync(join(tmpdir(), 'mp-log-scan-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const token = 'AbCdEfGhIjKlMnOpQrStUvWxYz012345';
const line = (msg: string) => JSON.stringify({ level: 30, msg });

describe('the run-log credential scan', () => {
  it('finds every credential shape, and a noted secret verbatim', () => {
    const bad = [
      `sk-service-${'0123456789abcdef'.repeat(3)}`,
      'sk_test_51Habc123',
      'rk_live_abcdef123',
      'whsec_abcdefghijkl',
      '/files/a.png?expires=1&sig=abcdefghijklmnopqrstuv',
      `/invite/${token}`,
      `/api/invitations/${token}`,
      'cookie: mp_session=abcdefghijklmnopqrstuvwxyz',
      'authorization: Bearer 0123456789abcdef0123456789abcdef',
      'the kek is 9f8e7d6c5b4a39281706f5e4d3c2b1a0',
    ];
    writeFileSync(join(dir, 'bad.log'), `${bad.map(line).join('\n')}\n`);
    writeFileSync(join(dir, 'secrets-1.txt'), '9f8e7d6c5b4a39281706f5e4d3c2b1a0\n');
    const { findings, lines } = scanLogs(dir);
    expect(lines).toBe(bad.length);
    expect(findings.map((f) => f.line).sort((a, b) => a - b)).toEqual(bad.map((_, i) => i + 1));
    rmSync(join(dir, 'bad.log'));
  });

  it('passes what the servers log in their place', () => {
    const good = [
      redactConsoleUrl(`/invite/${token}`),
      redactConsoleUrl(`/api/invitations/${token}?t=${token}`),
      redactConsoleUrl('/api/invitations/accept'),
      redactQuery('/files/a.png?expires=1&sig=abcdefghijklmnopqrstuv'),
      redactQuery(`/v1/models?api_key=sk-service-${'0123456789abcdef'.repeat(3)}`),
      '"authorization":"[Redacted]"',
    ];
    writeFileSync(join(dir, 'good.log'), `${good.map(line).join('\n')}\n`);
    expect(good[0]).toBe('/invite/[redacted]');
    expect(scanLogs(dir).findings).toEqual([]);
  });
});
