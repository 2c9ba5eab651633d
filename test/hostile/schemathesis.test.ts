// Schemathesis against /openapi.json with a valid key (issue "Hardening"): generated requests for
// every documented operation, checked for server errors and for responses that break the
// document (status codes, content types, bodies). Bounded: a fixed number of examples per
// operation and a seed, so a run takes a few minutes at most and is repeatable.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../proxy/harness.ts';

const here = new URL('./', import.meta.url).pathname;
let h: Harness;
let st: string;
let key: string;
// Schemathesis keeps a cache of crashes in `.schemathesis/` under its working directory: a
// throwaway one, so a test run never leaves files in the repository.
const cwd = mkdtempSync(join(tmpdir(), 'schemathesis-'));
beforeAll(async () => {
  st = (await promisify(execFile)(`${here}schemathesis.sh`, ['--check'])).stdout.trim();
  h = await startHarness({ VIDEO_POLL_MS: '50' });
  key = (await h.newAccount({ credit: '100000' })).secret;
});
afterAll(async () => {
  await h?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

describe('schemathesis', () => {
  it('finds no 5xx and no response that violates /openapi.json', async () => {
    const origin = h.baseURL.replace(/\/v1$/, '');
    const args = [
      'run',
      `${origin}/openapi.json`,
      '--header',
      `Authorization: Bearer ${key}`,
      '--header',
      `x-api-key: ${key}`,
      '--checks',
      'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance',
      '--max-examples',
      process.env.SCHEMATHESIS_EXAMPLES ?? '20',
      '--seed',
      '7',
      '--request-timeout',
      '20',
      '--generation-deterministic',
      '--no-color',
    ];
    const run = await promisify(execFile)(st, args, {
      cwd,
      timeout: 280_000,
      maxBuffer: 64 * 1024 * 1024,
    }).then(
      (r) => ({ code: 0, out: r.stdout + r.stderr }),
      (e: { code?: number; stdout?: string; stderr?: string }) => ({
        code: e.code ?? -1,
        out: `${e.stdout}${e.stderr}`,
      }),
    );
    expect(run.out, run.out.slice(-6_000)).toMatch(/operations? (tested|covered)|Test cases|passed/i);
    expect(run.code, run.out.slice(-8_000)).toBe(0);
  }, 300_000);
});
