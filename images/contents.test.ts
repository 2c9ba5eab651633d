// What an image holds is one list (images/app-contents.txt) staged by one script
// (scripts/stage-app.sh) that both builds run — the umoci one (`make images`) and the Dockerfile —
// and the list holds every folder the images' entrypoints import. Issue 40: the Dockerfile kept its
// own copy of the list, without dist/http, so a Docker-built proxy could not start. Fast: no build.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { importGraph, sourceFiles } from '../test/layout/imports.ts';

const repo = new URL('../', import.meta.url).pathname;
const read = (path: string) => readFileSync(join(repo, path), 'utf8');
const dockerfile = read('images/service.Dockerfile');
const umociBuild = read('scripts/build-images.sh');

function listed(): string[] {
  return read('images/app-contents.txt')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

/** The /app/dist/… and /app/src/… files a build's entrypoints run. */
function entrypoints(text: string): string[] {
  return [
    ...new Set([...text.matchAll(/\/app\/((?:dist|src)\/[\w/.-]+\.(?:js|ts))/g)].map((m) => m[1]!)),
  ].sort();
}

const work = mkdtempSync(join(tmpdir(), 'mp-app-contents-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the images hold one list of contents', () => {
  it('both builds stage /app with scripts/stage-app.sh and copy no application folder of their own', () => {
    expect(dockerfile).toMatch(/scripts\/stage-app\.sh \/out\b/);
    expect(umociBuild).toMatch(/scripts\/stage-app\.sh "\$A"/);
    for (const text of [dockerfile, umociBuild]) expect(text).not.toMatch(/cp -r[^\n]*\bdist\//);
  });

  it('both builds run the same entrypoints', () => {
    expect(entrypoints(umociBuild)).toEqual(entrypoints(dockerfile));
    expect(entrypoints(dockerfile)).toHaveLength(4);
  });

  it('every folder an entrypoint imports is in the list (compiled ones as dist/, the console as src/)', () => {
    const graph = importGraph(repo, sourceFiles(repo));
    const list = new Set(listed());
    // The admin CLI is no entrypoint but runs in the images too (`kubectl exec … node
    // dist/cli/modelplane.js`, docs/install.md "The admin CLI in the cluster").
    for (const entry of [...entrypoints(dockerfile), 'dist/cli/modelplane.js']) {
      const [kind, ...rest] = entry.split('/');
      const start = rest.join('/').replace(/\.js$/, '.ts');
      expect(graph.has(start), `${entry}: no source ${start}`).toBe(true);
      const seen = new Set<string>([start]);
      const queue = [start];
      while (queue.length > 0) {
        for (const dep of graph.get(queue.pop()!) ?? []) {
          if (seen.has(dep)) continue;
          seen.add(dep);
          queue.push(dep);
        }
      }
      const folders = new Set([...seen].map((f) => `${kind}/${f.split('/')[0]}`));
      for (const folder of folders) expect(list.has(folder), `${entry} imports from ${folder}`).toBe(true);
    }
  });

  it('stage-app.sh copies exactly the listed folders, without maps, tests or the web sources', () => {
    const root = join(work, 'repo');
    for (const dir of ['images', 'scripts']) mkdirSync(join(root, dir), { recursive: true });
    copyFileSync(join(repo, 'images/app-contents.txt'), join(root, 'images/app-contents.txt'));
    copyFileSync(join(repo, 'scripts/stage-app.sh'), join(root, 'scripts/stage-app.sh'));
    for (const entry of listed()) {
      const from = entry.startsWith('dist/') ? entry : entry.slice('src/'.length);
      mkdirSync(join(root, from), { recursive: true });
      writeFileSync(join(root, from, 'main.js'), '');
      writeFileSync(join(root, from, 'main.js.map'), '');
      writeFileSync(join(root, from, 'main.test.ts'), '');
    }
    mkdirSync(join(root, 'console/web/src'), { recursive: true });
    mkdirSync(join(root, 'console/web/dist'), { recursive: true });
    mkdirSync(join(root, 'unlisted'));
    writeFileSync(join(root, 'unlisted/x.js'), '');
    execFileSync('sh', [join(root, 'scripts/stage-app.sh'), join(work, 'out')]);
    const files = execFileSync('find', ['.', '-type', 'f'], { cwd: join(work, 'out/app'), encoding: 'utf8' })
      .trim()
      .split('\n')
      .sort();
    expect(files).toEqual(
      listed()
        .map((e) => `./${e}/main.js`)
        .sort(),
    );
    expect(execFileSync('find', ['console'], { cwd: join(work, 'out/app/src'), encoding: 'utf8' })).toContain(
      'console/web/dist',
    );
  });
});
