// Every command the install docs tell an admin to run exists (issue 36): README, docs/install.md,
// operator/README.md and the chart's NOTES.txt are read for `make <target>`, `npm run <script>`,
// admin CLI invocations (`node dist/cli/modelplane.js …`, NOTES' `{{ $cli }} …`, install.md's
// `mp …`, `npx modelplane …`) and repository files handed to `-f`; each target must be a rule of
// the Makefile, each script in package.json, each CLI line must name a real command whose flags
// and arguments its own parser accepts (the same check it runs before touching Redis), and each
// file must exist. Value paths are docs-values.test.ts's. A renamed target, command or flag in
// the code, or a typo in the docs, fails here.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from '../../cli/args.ts';
import { commands } from '../../cli/main.ts';
import { repo } from './helm.ts';

const files = ['README.md', 'docs/install.md', 'operator/README.md', 'charts/modelplane/templates/NOTES.txt'];
const read = (file: string) => readFileSync(join(repo, file), 'utf8');

/** What a reader would run: Markdown's code blocks and code spans (its prose says "make your …"); NOTES whole. */
function code(file: string): string {
  const text = read(file);
  if (!file.endsWith('.md')) return text;
  const blocks = [...text.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
  const spans = [...text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/`([^`\n]+)`/g)].map(
    (m) => `\`${m[1]!}\``,
  );
  return [...blocks, ...spans].join('\n');
}

const makeTargets = new Set(
  [...read('Makefile').matchAll(/^([A-Za-z0-9_-]+(?:\s+[A-Za-z0-9_-]+)*)\s*:(?!=)/gm)].flatMap((m) =>
    m[1]!.split(/\s+/),
  ),
);
const npmScripts = new Set(Object.keys((JSON.parse(read('package.json')) as { scripts: object }).scripts));

/** The words of a shell command up to a comment, a redirection, a pipe or the end of a code span. */
function words(rest: string): string[] {
  const cut = rest.split(/\s+#|\s[<>|]\s|;|&&|\s&|`|\$\(/)[0] ?? '';
  return cut.trim().split(/\s+/).filter(Boolean);
}

interface Found {
  make: string[];
  npm: string[];
  cli: string[][];
  files: string[];
}

function commandsIn(text: string): Found {
  const found: Found = { make: [], npm: [], cli: [], files: [] };
  for (const m of text.matchAll(/(?<![\w-])make ([a-z][a-z0-9-]*)/g)) found.make.push(m[1]!);
  for (const m of text.matchAll(/npm run ([a-z][\w:-]*)/g)) found.npm.push(m[1]!);
  const cli =
    /(?:dist\/cli\/modelplane\.js|\{\{ \$cli \}\}|npx modelplane|^\s*mp|\$\(mp|`mp) ([a-z][^\n]*)/gm;
  for (const m of text.matchAll(cli)) {
    const argv = words(m[1]!).filter((w) => w !== '"$@"' && w !== '...' && w !== '…');
    if (argv.length > 0) found.cli.push(argv);
  }
  for (const m of text.matchAll(/(?:^|\s)-f\s+((?:crds|examples|operator|charts|test)\/[\w./-]*[\w/])/gm))
    found.files.push(m[1]!);
  return found;
}

/** null when the CLI would accept the line; else what it says is wrong. */
function cliProblem(argv: string[]): string | null {
  let best: (typeof commands)[number] | undefined;
  for (const c of commands) {
    const name = c.name.split(' ');
    if (name.every((w, i) => argv[i] === w) && (!best || name.length > best.name.split(' ').length)) best = c;
  }
  if (!best) return `no command '${argv.slice(0, 2).join(' ')}'`;
  try {
    best.prepare(parse(argv.slice(best.name.split(' ').length), best.flags));
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

describe('the commands the install docs name', () => {
  it('finds what it looks for, and its checks refuse a wrong one (the scan itself works)', () => {
    const f = commandsIn(
      [
        '```sh',
        'make dev    # the platform',
        'mp accounts create --name acme --credits 10   # prints the id',
        'mp users create --email you@example.com --account <accountId> < password.txt',
        'kubectl apply -f crds/model.yaml',
        '```',
        'then `npm run start:proxy` and `{{ $cli }} keys create <accountId> --name first`',
      ].join('\n'),
    );
    expect(f).toEqual({
      make: ['dev'],
      npm: ['start:proxy'],
      cli: [
        ['accounts', 'create', '--name', 'acme', '--credits', '10'],
        ['users', 'create', '--email', 'you@example.com', '--account', '<accountId>'],
        ['keys', 'create', '<accountId>', '--name', 'first'],
      ],
      files: ['crds/model.yaml'],
    });
    expect(f.cli.map(cliProblem)).toEqual([null, null, null]);
    expect(cliProblem(['acounts', 'create'])).toContain("no command 'acounts create'");
    expect(cliProblem(['accounts', 'create', '--nmae', 'x'])).not.toBeNull();
    expect(makeTargets.has('e2e-cluster')).toBe(true);
    expect(makeTargets.has('e2e-clustr')).toBe(false);
  });

  for (const file of files)
    it(`${file}: every make target, npm script, admin CLI line and -f file it names exists`, () => {
      const f = commandsIn(code(file));
      expect(
        f.make.filter((t) => !makeTargets.has(t)),
        'make targets',
      ).toEqual([]);
      expect(
        f.npm.filter((s) => !npmScripts.has(s)),
        'npm scripts',
      ).toEqual([]);
      expect(
        f.cli.map((argv) => [argv.join(' '), cliProblem(argv)]).filter(([, p]) => p !== null),
        'admin CLI lines',
      ).toEqual([]);
      expect(
        f.files.filter((p) => !existsSync(join(repo, p))),
        '-f files',
      ).toEqual([]);
    });

  it('the docs name the admin CLI at all (so the scan above checks something)', () => {
    expect(commandsIn(code('docs/install.md')).cli.length).toBeGreaterThanOrEqual(3);
    expect(commandsIn(code('charts/modelplane/templates/NOTES.txt')).cli.length).toBeGreaterThanOrEqual(3);
  });
});
