// The journal's schema: the numbered SQL files in ./migrations, applied in order at start by every
// part that opens the journal, each once, in its own transaction, under an advisory lock so that
// replicas starting together do not race. Forward-only: a file is never edited once released (a
// change is a new file), and a database that has a migration this code does not know is refused —
// it was written by a newer release, and an older one must not run on it.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');
/** Any constant of our own: the advisory lock that serialises migrating replicas. */
const LOCK = 2_300_023;

export function migrationFiles(dir = MIGRATIONS_DIR): { version: string; sql: string }[] {
  return readdirSync(dir)
    .filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: f.replace(/\.sql$/, ''), sql: readFileSync(join(dir, f), 'utf8') }));
}

/** Applies what is missing; returns the versions it applied. */
export async function migrate(pool: pg.Pool, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = migrationFiles(dir);
  const c = await pool.connect();
  try {
    await c.query('select pg_advisory_lock($1)', [LOCK]);
    await c.query(
      'create table if not exists schema_migrations (version text primary key, applied_at timestamptz not null default now())',
    );
    const applied = new Set(
      (await c.query<{ version: string }>('select version from schema_migrations')).rows.map(
        (r) => r.version,
      ),
    );
    const known = new Set(files.map((f) => f.version));
    const unknown = [...applied].filter((v) => !known.has(v));
    if (unknown.length > 0)
      throw new Error(
        `the journal database has migrations this release does not know (${unknown.join(', ')}): it was written by a newer release; run that one`,
      );
    const done: string[] = [];
    for (const f of files) {
      if (applied.has(f.version)) continue;
      await c.query('begin');
      try {
        await c.query(f.sql);
        await c.query('insert into schema_migrations (version) values ($1)', [f.version]);
        await c.query('commit');
      } catch (err) {
        await c.query('rollback');
        throw new Error(`journal migration ${f.version} failed: ${(err as Error).message}`, { cause: err });
      }
      done.push(f.version);
    }
    return done;
  } finally {
    await c.query('select pg_advisory_unlock($1)', [LOCK]).catch(() => {});
    c.release();
  }
}
