// docs/operations.md "Configuration" against the schemas each service parses (./index.ts): every
// variable a schema has is in the table, and a variable the table says a service uses is one that
// service parses — so a setting moved between owners, or added without its row, fails here.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configOwners } from './index.ts';

const doc = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
const section = doc.slice(
  doc.indexOf('## Configuration'),
  doc.indexOf('\n## ', doc.indexOf('## Configuration') + 5),
);
/**
 * The table's rows: each variable its first cell names, with its "used by" cell. `A` / `B` is two;
 * `CONSOLE_TOPUP_MIN` / `_MAX` is CONSOLE_TOPUP_MIN and CONSOLE_TOPUP_MAX.
 */
const rows = section
  .split('\n')
  .filter((l) => l.startsWith('| `'))
  .flatMap((l) => {
    const [, names = '', , usedBy = ''] = l.split('|');
    // `operator (local)`: the operator, in one of its runtimes.
    const users = usedBy
      .trim()
      .split(/,\s*/)
      .map((u) => u.replace(/\s*\(.*\)$/, ''));
    let last = '';
    return [...names.matchAll(/`(_?[A-Z][A-Z0-9_]*)`/g)].map((m) => {
      const named = m[1]!;
      const suffix = named.split('_').length - 1;
      last = named.startsWith('_') ? last.split('_').slice(0, -suffix).join('_') + named : named;
      return { name: last, users };
    });
  });
const parsedBy = {
  proxy: new Set(Object.keys({ ...configOwners.all, ...configOwners.media, ...configOwners.proxy })),
  console: new Set(Object.keys({ ...configOwners.all, ...configOwners.media, ...configOwners.console })),
  all: new Set(Object.keys(configOwners.all)),
  operator: new Set(['REDIS_URL', 'LOG_LEVEL', ...Object.keys(configOwners.operator)]),
};
/**
 * Read outside a schema, each for its reason: KUBECONFIG by the Kubernetes client library itself;
 * the simulator's image by its engine kind (operator/engines/simulator.ts), the one engine whose
 * image an install chooses; the uninstall hook's timeout by that one-shot Job.
 */
const readDirectly = new Set(['KUBECONFIG', 'OPERATOR_SIMULATOR_IMAGE', 'UNINSTALL_TIMEOUT_SECONDS']);

describe('configuration by owner', () => {
  it('every variable of every schema has its row in docs/operations.md "Configuration"', () => {
    const listed = new Set(rows.map((r) => r.name));
    const schemas = Object.values(configOwners).flatMap((shape) => Object.keys(shape));
    expect(schemas.filter((v) => !listed.has(v))).toEqual([]);
  });

  it('a variable the table says a service uses is one that service parses', () => {
    const wrong = rows.flatMap((r) =>
      r.users
        .filter((u): u is keyof typeof parsedBy => u in parsedBy)
        .filter((u) => !parsedBy[u].has(r.name) && !readDirectly.has(r.name))
        .map((u) => `${r.name} (used by ${u})`),
    );
    expect(wrong).toEqual([]);
  });

  it('each service parses only its own and the shared settings', () => {
    const consoleOnly = Object.keys(configOwners.console);
    const proxyOnly = Object.keys(configOwners.proxy);
    expect(consoleOnly.filter((v) => parsedBy.proxy.has(v))).toEqual([]);
    expect(proxyOnly.filter((v) => parsedBy.console.has(v))).toEqual([]);
    expect(consoleOnly.every((v) => /^(CONSOLE|STRIPE)_/.test(v))).toBe(true);
    // The operator parses no proxy or console setting, and they parse none of its.
    const operatorOnly = Object.keys(configOwners.operator);
    expect([...parsedBy.operator].filter((v) => parsedBy.proxy.has(v))).toEqual(['REDIS_URL', 'LOG_LEVEL']);
    expect(operatorOnly.filter((v) => parsedBy.proxy.has(v) || parsedBy.console.has(v))).toEqual([]);
  });
});
