// scripts/py-venv-cached.sh on a cold cache: several installs at once (two test files, two
// checkouts) must each end with the one working venv, none deleting or writing into another's
// (a fresh machine's `make test` once failed on "No such file or directory: …INSTALLER….tmp" when
// one install `rm -rf`ed the venv another was installing into; that logic, raced so, failed in 1
// of 3 rounds here). The requirement is a wheel of 400 modules the test writes itself, installed
// with --no-index, so the test needs no registry and each install takes long enough to overlap.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const script = new URL('./py-venv-cached.sh', import.meta.url).pathname;
const cache = mkdtempSync(join(tmpdir(), 'mp-venv-'));
afterAll(() => rmSync(cache, { recursive: true, force: true }));
const wheels = mkdtempSync(join(tmpdir(), 'mp-wheel-'));
afterAll(() => rmSync(wheels, { recursive: true, force: true }));
const env = { ...process.env, MODELPLANE_CACHE: cache };

/** Writes mpracer-1.0-py3-none-any.whl: 400 small modules, a valid RECORD. */
function racerWheel(): string {
  const py = `
import sys, zipfile, hashlib, base64
files = {'mpracer/__init__.py': b'VALUE = 1\\n'}
for i in range(400):
    files[f'mpracer/m{i}.py'] = (f'X = {i}\\n' * 200).encode()
di = 'mpracer-1.0.dist-info'
files[di + '/METADATA'] = b'Metadata-Version: 2.1\\nName: mpracer\\nVersion: 1.0\\n'
files[di + '/WHEEL'] = b'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n'
rec = [p + ',sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode() + ',' + str(len(b)) for p, b in files.items()]
files[di + '/RECORD'] = ('\\n'.join(rec + [di + '/RECORD,,']) + '\\n').encode()
with zipfile.ZipFile(sys.argv[1], 'w') as z:
    for p, b in files.items(): z.writestr(p, b)
`;
  const wheel = join(wheels, 'mpracer-1.0-py3-none-any.whl');
  execFileSync('python3', ['-c', py, wheel]);
  return wheel;
}

describe('py-venv-cached.sh', () => {
  it('--check on a cold cache installs nothing and exits 3, naming make test-deps', async () => {
    const err = await run(script, ['--check', 'cold', 'mpracer', 'mpracer'], { env }).catch((e) => e);
    expect(err.code).toBe(3);
    expect(String(err.stderr)).toMatch(/run make test-deps/);
    expect(readdirSync(cache)).toEqual([]);
  });

  it('four installs at once all succeed and leave one working venv, no build left aside', async () => {
    const args = ['raced', 'mpracer', '--no-index', racerWheel()];
    const outs = await Promise.all([1, 2, 3, 4].map(() => run(script, args, { env, timeout: 120_000 })));
    const pythons = new Set(outs.map((o) => o.stdout.trim()));
    expect([...pythons]).toEqual([join(cache, 'raced', 'bin', 'python')]);
    expect(readdirSync(cache)).toEqual(['raced']);
    // Built aside and renamed: the entry scripts name the final path, not the build's.
    const pip = await run(join(cache, 'raced', 'bin', 'pip'), ['--version'], { env });
    expect(pip.stdout).toContain(join(cache, 'raced'));
    const checked = await run(script, ['--check', ...args], { env });
    expect(checked.stdout.trim()).toBe(join(cache, 'raced', 'bin', 'python'));
  }, 180_000);
});
