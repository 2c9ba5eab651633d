// Every chart value the install docs name exists (issue 36): README, docs/install.md,
// operator/README.md, NOTES.txt and values.yaml's own comments are read for value paths such as
// `proxy.journal.persistence.enabled` or `--set redis.mode=external`, and each path must be a
// property the values schema knows — a renamed or invented value in the docs fails here.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chartDir, repo } from './helm.ts';

interface Schema {
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
}
const schema = JSON.parse(readFileSync(join(chartDir, 'values.schema.json'), 'utf8')) as Schema;
const roots = Object.keys(schema.properties ?? {}).filter((k) => k !== 'global');

/** Does the schema know this dotted path? A free-form map (additionalProperties) takes any key below. */
function known(path: string): boolean {
  let node: Schema | undefined = schema;
  for (const part of path.split('.')) {
    if (!node) return false;
    const next: Schema | undefined = node.properties?.[part];
    if (next) node = next;
    else if (typeof node.additionalProperties === 'object') return true;
    else return false;
  }
  return true;
}

const files = ['README.md', 'docs/install.md', 'operator/README.md', 'charts/modelplane/templates/NOTES.txt'];

/** Value paths a text names: `a.b.c`, `a.b: x`, `a.b=x`, `--set a.b=x` (not file names like console.md). */
function namedPaths(text: string): string[] {
  const rootAlt = roots.join('|');
  const re = new RegExp(`(?<![\\w./-])((?:${rootAlt})(?:\\.[A-Za-z][A-Za-z0-9]*)+)(?![\\w/-])`, 'g');
  const out = new Set<string>();
  for (const m of text.matchAll(re)) {
    const path = m[1]!;
    // File names and host names (console.example.com) are not values.
    if (/\.(md|ts|tsx|js|mjs|json|yaml|yml|txt|sh|tpl|com|org|net|io|example)$/.test(path)) continue;
    out.add(path);
  }
  return [...out].sort();
}

describe('the values the docs name', () => {
  it('finds the paths it looks for (the scan itself works)', () => {
    expect(
      namedPaths(
        'set `proxy.journal.persistence.enabled: true` and --set redis.mode=external; see console.md at console.example.com',
      ),
    ).toEqual(['proxy.journal.persistence.enabled', 'redis.mode']);
    expect(known('proxy.journal.persistence.enabled')).toBe(true);
    expect(known('proxy.journal.persistance.enabled')).toBe(false);
    expect(known('proxy.env.ANY_NAME')).toBe(true);
  });

  for (const file of files)
    it(`${file}: every value path it names is in values.schema.json`, () => {
      const text = readFileSync(join(repo, file), 'utf8');
      expect(namedPaths(text).filter((p) => !known(p))).toEqual([]);
    });

  it('values.yaml: every value path its comments name is in values.schema.json', () => {
    const comments = readFileSync(join(chartDir, 'values.yaml'), 'utf8')
      .split('\n')
      .filter((l) => l.trimStart().startsWith('#'))
      .join('\n');
    expect(namedPaths(comments).filter((p) => !known(p))).toEqual([]);
  });
});
