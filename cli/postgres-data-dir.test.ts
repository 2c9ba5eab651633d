// `make dev` as root from a clone in a folder other users cannot enter (issue 40 item 1): root's
// home is mode 700, and PostgreSQL, run as the postgres user, could not reach .data/postgres in a
// clone there ("cannot enter /root"). A fresh `git clone` of this repository under a mode-700
// folder starts its embedded PostgreSQL the way `make dev` does (cli/platform.ts: .data/postgres),
// says where the data went, and a second start finds the same data through the clone's link.
import { execFileSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../core/free-port.ts';
import { closedAncestor, relocatedName } from './postgres-data-dir.ts';
import { type PostgresServer, startPostgres } from './postgres-server.ts';

const repo = new URL('../', import.meta.url).pathname;
const root = process.getuid?.() === 0;

describe('where the embedded PostgreSQL keeps its data', () => {
  it('the first folder others cannot enter; one data folder per clone', () => {
    const open = new Set(['/', '/home', '/home/me']);
    expect(closedAncestor('/home/me/mp/.data/postgres', (d) => open.has(d))).toBe('/home/me/mp/.data');
    expect(closedAncestor('/root/mp/.data/postgres', (d) => d !== '/root')).toBe('/root');
    expect(closedAncestor('/srv/mp/.data/postgres', () => true)).toBeNull();
    expect(relocatedName('/root/mp/.data/postgres')).toMatch(/^mp-postgres-[0-9a-f]{12}$/);
    expect(relocatedName('/root/a/mp/.data/postgres')).not.toBe(relocatedName('/root/b/mp/.data/postgres'));
  });

  const cleanup: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  it.runIf(root)(
    'as root, a fresh clone under a mode-700 folder starts it as make dev does, and finds its data again',
    async () => {
      const home = mkdtempSync(join(tmpdir(), 'mp-root-home-'));
      cleanup.push(() => rmSync(home, { recursive: true, force: true }));
      chmodSync(home, 0o700);
      const clone = join(home, 'modelplane');
      execFileSync('git', ['clone', '--quiet', '--depth', '1', `file://${repo}`, clone], { stdio: 'ignore' });
      const asked = join(clone, '.data', 'postgres');
      const said: string[] = [];
      const start = async () =>
        startPostgres({ dataDir: asked, port: await freePort(), log: (l) => said.push(l) });
      let server: PostgresServer = await start();
      cleanup.push(() => rmSync(server.dataDir, { recursive: true, force: true }));
      cleanup.push(() => server.stop());
      expect(server.dataDir.startsWith(home)).toBe(false);
      expect(lstatSync(asked).isSymbolicLink()).toBe(true);
      expect(readlinkSync(asked)).toBe(server.dataDir);
      expect(said.join('\n')).toContain(`its data is in ${server.dataDir} (${asked} links there)`);
      const query = async (sql: string) => {
        const c = new pg.Client({ connectionString: server.url });
        await c.connect();
        try {
          return (await c.query(sql)).rows;
        } finally {
          await c.end();
        }
      };
      await query('create table kept (v int); insert into kept values (42)');
      await server.stop();
      // The next `make dev` from the same clone: the same data, through the link.
      server = await start();
      expect(await query('select v from kept')).toEqual([{ v: 42 }]);
    },
    120_000,
  );
});
