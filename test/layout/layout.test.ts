// The shape DESIGN.md ("The moving parts") gives the code, checked on the code itself: the "may
// import" table between the top-level folders (tests and benchmarks may import anything), no import
// circle anywhere, and the proxy's rooms (routes declare and parse; a call's money is
// proxy/calls/ and proxy/billing/ only).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FAULTS } from '../../proxy/faults/faults.ts';
import { SLOW_FIRST } from '../slow-first.ts';
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
    expect(files.filter((f) => f.startsWith('console/web/')).length).toBeGreaterThan(10); // .tsx read too
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

  it('proxy routes declare and parse only: no route imports another, nor a charge; Metering and LeaseMetering are built by billing alone', () => {
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
        /\bnew (Lease)?Metering\b/.test(readFileSync(`${root}${f}`, 'utf8')),
    );
    expect(meterings).toEqual([]);
  });

  it("an endpoint's facts are read from its table (core/endpoints.ts): no '/v1/…' path is compared anywhere else", () => {
    const compared =
      /(?:[=!]==\s*['"`]\/v1\/[^'"`]*['"`])|(?:['"`]\/v1\/[^'"`]*['"`]\s*[=!]==)|(?:case\s+['"`]\/v1\/)/g;
    // A check of the check (on a copy: a global pattern's test moves its lastIndex).
    expect(new RegExp(compared.source).test("if (r.endpoint === '/v1/messages')")).toBe(true);
    const offending = files
      .filter((f) => /^(proxy|console|http|core)\//.test(f) && !isTest(f) && f !== 'core/endpoints.ts')
      .flatMap((f) =>
        [...readFileSync(`${root}${f}`, 'utf8').matchAll(compared)].map((m) => `${f}: ${m[0]}`),
      );
    expect(offending).toEqual([]);
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

  it('the operator writes the catalogue only through catalogue-writer.ts (fenced by leadership term): nothing else in operator/ imports the store or the fence', () => {
    const writers = files.filter(
      (f) =>
        f.startsWith('operator/') &&
        !isTest(f) &&
        (graph.get(f) ?? []).some((d) => d === 'core/catalogue/store.ts' || d === 'core/catalogue/fence.ts'),
    );
    expect(writers.sort()).toEqual(['operator/main.ts', 'operator/runtime/catalogue-writer.ts']);
  });

  it('no file under proxy/dialects/ imports proxy/billing/: usage and cost come from the leaf proxy/usage.ts', () => {
    const dialects = files.filter((f) => f.startsWith('proxy/dialects/'));
    expect(dialects.length).toBeGreaterThan(10);
    const offending = dialects.flatMap((f) =>
      (graph.get(f) ?? []).filter((d) => d.startsWith('proxy/billing/')).map((d) => `${f} -> ${d}`),
    );
    expect(offending).toEqual([]);
    // The leaf is one: it imports nothing.
    expect(graph.get('proxy/usage.ts')).toEqual([]);
  });

  it('nothing outside proxy/engine/ reads engine frames but through their door (tests aside), and the door keeps the byte reader in', () => {
    const door = 'proxy/engine/frames/index.ts';
    const room = files.filter((f) => f.startsWith('proxy/engine/frames/') && !isTest(f) && f !== door);
    expect(room).toEqual(
      expect.arrayContaining(['proxy/engine/frames/members.ts', 'proxy/engine/frames/delta-frame.ts']),
    );
    const offending = files
      // test/ and bench/ span parts and may read anything (DESIGN); the rest cannot import proxy/.
      .filter((f) => f.startsWith('proxy/') && !f.startsWith('proxy/engine/') && !isTest(f))
      .flatMap((f) => (graph.get(f) ?? []).filter((d) => room.includes(d)).map((d) => `${f} -> ${d}`));
    expect(offending).toEqual([]);
    // The door gives frames read, usage reported, client frames cut — never the stepping over bytes.
    expect(graph.get(door)).not.toContain('proxy/engine/frames/members.ts');
    expect(
      files.filter((f) => f.startsWith('proxy/dialects/openai/') && /members|chunks|delta-frame/.test(f)),
    ).toEqual([]);
  });

  // A file at a part's root is its own node: lumped together they would join every folder (app.ts
  // imports them all), and apart a loop through one of them (request-abort.ts) is still seen.
  function roomGraph(part: string): Map<string, string[]> {
    const node = (f: string) => {
      const parts = f.split('/');
      return parts.length > 2 ? `${part}/${parts[1]}/` : f;
    };
    const rooms = new Map<string, string[]>();
    for (const [file, deps] of graph) {
      if (!file.startsWith(`${part}/`) || isTest(file)) continue;
      const from = node(file);
      const out = rooms.get(from) ?? [];
      rooms.set(from, out);
      for (const dep of deps) {
        const to = node(dep);
        if (dep.startsWith(`${part}/`) && to !== from && !out.includes(to)) out.push(to);
      }
    }
    return rooms;
  }

  it('no folder loop inside proxy/: its subfolders (and the files at its root, each on its own) import one another in one direction', () => {
    const rooms = roomGraph('proxy');
    expect(rooms.size).toBeGreaterThan(10);
    expect(importCircles(rooms)).toEqual([]);
  });

  it("core/'s rooms by concern (issue 46): accounts, keys, catalogue, billing, usage, ledger, journal, jobs, redis… import one another in one direction", () => {
    const rooms = roomGraph('core');
    expect(rooms.size).toBeGreaterThan(10);
    expect(importCircles(rooms)).toEqual([]);
  });

  it('the operator laid out by question (issue 46): its rooms import one another in one direction, and its root holds at most 16 entries', () => {
    const rooms = roomGraph('operator');
    expect(rooms.size).toBeGreaterThan(10);
    expect(importCircles(rooms)).toEqual([]);
    const entries = readdirSync(`${root}operator`).filter((e) => !/\.test\.ts$/.test(e));
    expect(entries.length).toBeLessThanOrEqual(16);
  });

  it('a fault is one entry in one table: no proxy file but proxy/faults/faults.ts names a fault, its refusal or its gauge', () => {
    const table = 'proxy/faults/faults.ts';
    const names = FAULTS.flatMap((f) => [f.type, f.refusal.name, f.metric.name]);
    expect(names).toContain('mp_proxy_redis_data_lost');
    expect(names).toContain('storeLostData');
    const tableText = readFileSync(`${root}${table}`, 'utf8');
    for (const n of names) expect(tableText).toContain(n);
    const elsewhere = files
      .filter((f) => f.startsWith('proxy/') && !isTest(f) && f !== table)
      .flatMap((f) => {
        const text = readFileSync(`${root}${f}`, 'utf8');
        return names.filter((n) => new RegExp(`\\b${n}\\b`).test(text)).map((n) => `${f}: ${n}`);
      });
    expect(elsewhere).toEqual([]);
  });

  it("one class named Journal (the PostgreSQL one); the proxy's local file is the SettlementJournal", () => {
    const journals = files.filter((f) => /\bclass\s+Journal\b/.test(readFileSync(`${root}${f}`, 'utf8')));
    expect(journals).toEqual(['core/journal/journal.ts']);
    expect(readFileSync(`${root}proxy/billing/settlement-journal.ts`, 'utf8')).toMatch(
      /\bclass SettlementJournal\b/,
    );
  });

  it('the Redis Cluster run (Makefile REDIS_CLUSTER_SUITES) holds every SDK suite and every journal suite on Redis', () => {
    /** Whether `from` imports `to`, directly or through other files. */
    function reaches(from: string, to: string): boolean {
      const seen = new Set([from]);
      const queue = [from];
      while (queue.length > 0)
        for (const d of graph.get(queue.pop()!) ?? []) {
          if (d === to) return true;
          if (!seen.has(d)) {
            queue.push(d);
            seen.add(d);
          }
        }
      return false;
    }
    const make = readFileSync(`${root}Makefile`, 'utf8');
    const list = /^REDIS_CLUSTER_SUITES := ((?:.*\\\n)*.*)$/m
      .exec(make)?.[1]
      ?.split(/[\s\\]+/)
      .filter(Boolean);
    expect(list?.length).toBeGreaterThan(10);
    for (const f of list ?? []) expect(files, `${f} is listed but missing`).toContain(f);
    const onRedis = files.filter(
      (f) =>
        (f.startsWith('test/sdk/') || f.startsWith('core/journal/')) &&
        isTest(f) &&
        reaches(f, 'test/helpers/redis.ts'),
    );
    expect(onRedis.length).toBeGreaterThanOrEqual(4);
    expect(onRedis.filter((f) => !list?.includes(f))).toEqual([]);
  });

  it('every text request passes the policy door (issue 30): only proxy/calls/text-door.ts makes an admitted request, and no dialect or route checks a policy of its own', () => {
    const door = 'proxy/calls/text-door.ts';
    const makers = files.filter(
      (f) =>
        !isTest(f) &&
        f !== door &&
        /as unknown as (AdmittedPrompt|OutputBound)\b|\[admitted\]/.test(readFileSync(`${root}${f}`, 'utf8')),
    );
    expect(makers).toEqual([]);
    expect(readFileSync(`${root}${door}`, 'utf8')).toMatch(/as unknown as AdmittedPrompt/);
    // A text call and a token count take only what the door admitted.
    for (const f of ['proxy/calls/text-call.ts', 'proxy/calls/token-count.ts'])
      expect(readFileSync(`${root}${f}`, 'utf8'), f).toMatch(/AdmittedPrompt/);
    // The media-URL policy is applied at the door alone, never by a dialect or a route.
    const policyUsers = [...graph]
      .filter(([f, deps]) => !isTest(f) && deps.includes('proxy/media-urls.ts'))
      .map(([f]) => f);
    expect(policyUsers).toEqual([door]);
  });

  it('the slow-first test order names only test files that exist', () => {
    for (const name of SLOW_FIRST) expect(existsSync(`${root}${name}`), name).toBe(true);
  });
});
