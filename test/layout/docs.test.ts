// The README is the door and docs/ the manual (issue 29 item 6): the README stays short and links
// every doc, every relative link in our markdown reaches a file (and, with an anchor, a heading
// there), and every place code cites a doc's section by name (`docs/faults.md "Faults"`) names a
// heading that exists — so moving or renaming a section fails here, not in a reader's hands.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { API_MANUAL_URL } from '../../console/routes/pages.ts';
import { anchors, citations, githubSlug, headings, links, namesHeading, rowTitles } from './markdown.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string) => readFileSync(join(root, file), 'utf8');

/** Folders no check reads: other people's code, build output. */
const SKIP = new Set(['node_modules', 'dist', '.data', '.git', 'test/out', 'bench/out']);
const CITING = /\.(ts|tsx|sh|ya?ml|tpl|txt|json|md)$|(^|\/)Makefile$/;

function walk(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
    if (SKIP.has(entry.name) || SKIP.has(path)) return [];
    return entry.isDirectory() ? walk(path) : [path];
  });
}

const everyFile = walk('');
const docs = everyFile.filter((f) => /^docs\/[^/]+\.md$/.test(f));
const markdownFiles = everyFile.filter((f) => f.endsWith('.md'));

describe('the README and docs/', () => {
  it('slugs and citations are read as GitHub and our comments write them (a check of the checker)', () => {
    expect(githubSlug('Faults: what each does, what you see, what to do')).toBe(
      'faults-what-each-does-what-you-see-what-to-do',
    );
    expect(githubSlug('Use it from Codex CLI / Claude Code / Cursor / Continue')).toBe(
      'use-it-from-codex-cli--claude-code--cursor--continue',
    );
    expect(githubSlug('vLLM 0.32 for real: `make e2e-vllm`')).toBe('vllm-032-for-real-make-e2e-vllm');
    expect(githubSlug('The durable journal (PostgreSQL)')).toBe('the-durable-journal-postgresql');
    expect([...anchors('# A\n\n## B\n```sh\n# not a heading\n```\n## B\n')]).toEqual(['a', 'b', 'b-1']);
    expect(links('see [x](a.md#b) and `[y](no.md)`\n```\n[z](no.md)\n```\n![i](img.png "t")')).toEqual([
      { target: 'a.md#b', line: 1 },
      { target: 'img.png', line: 5 },
    ]);
    const cited = citations(
      '// as README "Layout" says\n  // (docs/money.md\n  // "The durable journal"), docs/security.md "Sign-in\n  # throttling"\n' +
        '"description": "x (docs/operations.md \\"Configuration\\")"\n operator/README.md "promptBounds"',
    );
    expect(cited.map((c) => [c.doc, c.section, c.line])).toEqual([
      ['README.md', 'Layout', 1],
      ['docs/money.md', 'The durable journal', 2],
      ['docs/security.md', 'Sign-in throttling', 3],
      ['docs/operations.md', 'Configuration', 5],
    ]);
    expect(namesHeading('Faults', ['Faults: what each does'])).toBe(true);
    expect(namesHeading('Fault', ['Faults: what each does'])).toBe(false);
    expect(namesHeading('Turning tracing on', ['Turning tracing on'])).toBe(true);
  });

  it('README.md is the short door: at most 300 lines, linking every doc', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    const linked = new Set(links(readme).map((l) => l.target.split('#')[0]));
    expect(docs.length).toBeGreaterThan(0);
    expect(docs.filter((d) => !linked.has(d))).toEqual([]);
  });

  it("the console's API Reference (/docs) links the API manual, a file of this repository", () => {
    const path = /^https:\/\/github\.com\/modelplane\/modelplane\/blob\/main\/(.+)$/.exec(
      API_MANUAL_URL,
    )?.[1];
    expect(path).toBe('docs/api.md');
    expect(existsSync(join(root, path!))).toBe(true);
  });

  it('every doc opens with its title, a one-line purpose and a contents list', () => {
    const bad = docs.filter((d) => !/^# .+\n\n[^\n#].*\n\nContents:\n\n- \[/.test(read(d)));
    expect(bad).toEqual([]);
  });

  it('every relative link in our markdown reaches a file, and an anchor a heading there', () => {
    const broken: string[] = [];
    for (const file of markdownFiles) {
      for (const { target, line } of links(read(file))) {
        if (/^[a-z][a-z+.-]*:/i.test(target)) continue; // https:, mailto: — not ours to check
        const [path = '', anchor] = target.split('#');
        const to = path === '' ? file : normalize(join(dirname(file), decodeURIComponent(path)));
        const where = `${file}:${line} → ${target}`;
        if (to.startsWith('..') || !existsSync(join(root, to))) broken.push(`${where}: no such file`);
        else if (anchor !== undefined && statSync(join(root, to)).isFile() && to.endsWith('.md')) {
          if (!anchors(read(to)).has(anchor)) broken.push(`${where}: no heading #${anchor} in ${to}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('every citation of a README or docs/ section in the repository names a heading of that file', () => {
    const checked: string[] = [];
    const broken: string[] = [];
    for (const file of everyFile.filter((f) => CITING.test(f) && f !== 'package-lock.json')) {
      // This file's own examples cite sections that need not exist.
      if (file === relative(root, fileURLToPath(import.meta.url))) continue;
      for (const { doc, section, line } of citations(read(file))) {
        checked.push(`${doc} "${section}"`);
        const where = `${file}:${line}: ${doc} "${section}"`;
        if (!existsSync(join(root, doc))) broken.push(`${where}: no such file`);
        else if (!namesHeading(section, [...headings(read(doc)), ...rowTitles(read(doc))]))
          broken.push(`${where}: no such heading or runbook row`);
      }
    }
    expect(checked.length).toBeGreaterThan(20);
    expect(broken).toEqual([]);
  });

  it('no docs/_pending: branch drafts are folded into their doc at merge, never kept beside it', () => {
    expect(existsSync(join(root, 'docs/_pending'))).toBe(false);
  });
});
