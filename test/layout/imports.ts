// The import graph of the repository's own TypeScript (node_modules, dist and the web app's build
// aside), read from the sources' relative `import … from '…'`, `export … from '…'` and `import('…')`
// specifiers — type-only imports included: a circle of types is still two files that cannot be
// understood apart. Used by ./layout.test.ts to hold DESIGN's "may import" table and the rule of no
// import circles.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

const SKIP = new Set(['node_modules', 'dist', '.data', '.git', 'out']);
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

/** Every .ts/.tsx file under `root` (relative paths, `/`-separated). */
export function sourceFiles(root: string, dir = ''): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    if (SKIP.has(e.name)) continue;
    const rel = dir === '' ? e.name : `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...sourceFiles(root, rel));
    else if (/\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** file → the repository files it imports (relative specifiers only). */
export function importGraph(root: string, files: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const text = readFileSync(join(root, f), 'utf8');
    const deps: string[] = [];
    for (const m of text.matchAll(SPECIFIER)) {
      const target = normalize(join(dirname(f), m[1]!))
        .split('\\')
        .join('/');
      if (/\.tsx?$/.test(target)) deps.push(relative('.', target));
    }
    graph.set(f, deps);
  }
  return graph;
}

/** The import circles of `graph`: each strongly connected component of more than one file (or a self-import). */
export function importCircles(graph: Map<string, string[]>): string[][] {
  // Tarjan's strongly connected components, iteratively (no recursion depth limit).
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const circles: string[][] = [];
  for (const start of graph.keys()) {
    if (idx.has(start)) continue;
    const work: { v: string; i: number }[] = [{ v: start, i: 0 }];
    idx.set(start, index);
    low.set(start, index++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const deps = graph.get(top.v) ?? [];
      if (top.i < deps.length) {
        const w = deps[top.i++]!;
        if (!graph.has(w)) continue;
        if (!idx.has(w)) {
          idx.set(w, index);
          low.set(w, index++);
          stack.push(w);
          onStack.add(w);
          work.push({ v: w, i: 0 });
        } else if (onStack.has(w)) low.set(top.v, Math.min(low.get(top.v)!, idx.get(w)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low.set(parent.v, Math.min(low.get(parent.v)!, low.get(top.v)!));
      if (low.get(top.v) === idx.get(top.v)) {
        const comp: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          comp.push(w);
        } while (w !== top.v);
        if (comp.length > 1 || deps.includes(top.v)) circles.push(comp.sort());
      }
    }
  }
  return circles;
}
