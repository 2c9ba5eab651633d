// The shape DESIGN.md ("The moving parts") gives the code, checked on the code itself: the "may
// import" table between the top-level folders (tests and benchmarks may import anything), no import
// circle anywhere, and the proxy's rooms (routes declare and parse; a call's money is
// proxy/calls/ and proxy/billing/ only).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importCircles, importGraph, sourceFiles } from './imports.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const files = sourceFiles(root);
const graph = importGraph(root, files);
const isTest = (f: string) => /\.test\.tsx?$/.test(f);

/** DESIGN's table: what each folder may import besides itself. */
const MAY_IMPORT: Record<string, readonly string[]> = {
  core: [],
  http: ['core'],
  proxy: ['core', 'http'],
  operator: ['core'],
  console: ['core', 'http'],
  engines: [],
  cli: ['core'],
};

describe('layout', () => {
  it('the import graph is read (a check of the checker)', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(graph.get('console/app.ts')).toContain('http/index.ts');
    expect(
      importCircles(
        new Map([
          ['a', ['b']],
          ['b', ['a']],
          ['c', ['a']],
        ]),
      ),
    ).toEqual([['a', 'b']]);
  });

  it("DESIGN's may-import table holds between the top-level folders (test files aside)", () => {
    const broken: string[] = [];
    for (const [file, deps] of graph) {
      const top = file.split('/')[0]!;
      const may = MAY_IMPORT[top];
      if (may === undefined || isTest(file)) continue;
      for (const dep of deps) {
        const target = dep.split('/')[0]!;
        if (target !== top && !may.includes(target)) broken.push(`${file} -> ${dep}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('no import circles anywhere', () => {
    expect(importCircles(graph)).toEqual([]);
  });

  it('proxy routes declare and parse only: no route imports another, nor a charge; Metering is built by billing alone', () => {
    const routes = files.filter((f) => f.startsWith('proxy/routes/') && !isTest(f));
    expect(routes.length).toBeGreaterThan(5);
    const offending = routes.flatMap((f) =>
      (graph.get(f) ?? [])
        .filter((d) => d.startsWith('proxy/routes/') || d === 'proxy/billing/charge.ts')
        .map((d) => `${f} -> ${d}`),
    );
    expect(offending).toEqual([]);
    const meterings = files.filter(
      (f) =>
        f.startsWith('proxy/') &&
        !isTest(f) &&
        !f.startsWith('proxy/billing/') &&
        readFileSync(`${root}${f}`, 'utf8').includes('new Metering'),
    );
    expect(meterings).toEqual([]);
  });

  it('proxy routes neither call an engine nor touch files: proxy/routes/ imports no proxy/engine/, no node:fs', () => {
    const routes = files.filter((f) => f.startsWith('proxy/routes/') && !isTest(f));
    expect(routes.length).toBeGreaterThan(5);
    const offending = routes.flatMap((f) => [
      ...(graph.get(f) ?? []).filter((d) => d.startsWith('proxy/engine/')).map((d) => `${f} -> ${d}`),
      ...[
        ...readFileSync(`${root}${f}`, 'utf8').matchAll(
          /\bfrom\s*['"](node:fs(?:\/promises)?|fs(?:\/promises)?)['"]/g,
        ),
      ].map((m) => `${f} -> ${m[1]}`),
    ]);
    expect(offending).toEqual([]);
  });

  it('no folder loop in proxy/: its rooms (each folder, each loose file) import one another without a circle', () => {
    const room = (f: string) => {
      const parts = f.split('/');
      return parts.length > 2 ? `${parts[0]}/${parts[1]}/` : f;
    };
    const rooms = new Map<string, Set<string>>();
    for (const [file, deps] of graph) {
      if (!file.startsWith('proxy/') || isTest(file)) continue;
      const from = room(file);
      const to = rooms.get(from) ?? rooms.set(from, new Set()).get(from)!;
      for (const dep of deps) if (dep.startsWith('proxy/') && room(dep) !== from) to.add(room(dep));
    }
    expect(rooms.size).toBeGreaterThan(10);
    expect(importCircles(new Map([...rooms].map(([r, to]) => [r, [...to]])))).toEqual([]);
  });
});
