// A real PostgreSQL for a test file: the run's one server (started by the first file that asks,
// under a lock, and stopped by ./postgres-global.ts after the run), and a database of this file's
// own in it, so files never see each other's rows. Outside a vitest run with that globalSetup the
// file starts and stops a server of its own.
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { startPostgres } from '../../cli/postgres-server.ts';
import { freePort } from '../../core/free-port.ts';
import { Journal } from '../../core/journal/index.ts';

export interface FilePostgres {
  /** This file's database. */
  readonly url: string;
}

/** The run's server's URL (its `postgres` database), starting the server if nobody has yet. */
async function runServerUrl(): Promise<{ url: string; stop?: () => Promise<void> }> {
  const run = process.env.MP_TEST_PG_RUN;
  if (run === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'mp-pg-'));
    const server = await startPostgres({
      dataDir: join(dir, 'data'),
      port: await freePort(),
      throwaway: true,
    });
    chmodSync(dir, 0o755);
    return {
      url: server.url,
      stop: async () => {
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const urlFile = join(run, 'url');
  let mine = false;
  try {
    openSync(join(run, 'lock'), 'wx'); // exactly one file wins; the others wait for its url
    mine = true;
  } catch {
    // another file is starting it
  }
  if (mine) {
    chmodSync(run, 0o755); // the server may run as another user (root cannot run it)
    mkdirSync(join(run, 'data'), { recursive: true });
    try {
      const server = await startPostgres({
        dataDir: join(run, 'data'),
        port: await freePort(),
        throwaway: true,
        detachedLog: join(run, 'postgres.log'),
      });
      writeFileSync(join(run, 'pid'), String(server.child.pid));
      writeFileSync(urlFile, server.url);
    } catch (err) {
      writeFileSync(join(run, 'failed'), (err as Error).message);
      throw err;
    }
  }
  const deadline = Date.now() + 120_000;
  while (!existsSync(urlFile)) {
    if (existsSync(join(run, 'failed')))
      throw new Error(`the run's PostgreSQL failed to start: ${readFileSync(join(run, 'failed'), 'utf8')}`);
    if (Date.now() > deadline) throw new Error(`the run's PostgreSQL did not start (${run})`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url: readFileSync(urlFile, 'utf8') };
}

/** A fresh database on the run's server: its URL. */
export async function createTestDatabase(): Promise<{ url: string; stop?: () => Promise<void> }> {
  const server = await runServerUrl();
  const name = `t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const c = new pg.Client({ connectionString: server.url });
  await c.connect();
  try {
    await c.query(`create database ${name}`);
  } finally {
    await c.end();
  }
  const url = new URL(server.url);
  url.pathname = `/${name}`;
  return { url: url.toString(), ...(server.stop ? { stop: server.stop } : {}) };
}

export function postgresForFile(): FilePostgres {
  let db: { url: string; stop?: () => Promise<void> } | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => db?.stop?.());
  return {
    get url() {
      if (db === undefined)
        throw new Error('PostgreSQL is started in beforeAll: read it inside tests and hooks');
      return db.url;
    },
  };
}

/** This file's database, opened (and migrated) as the journal; closed after the file. */
export function journalForFile(): { readonly journal: Journal; readonly url: string } {
  const db = postgresForFile();
  let journal: Journal | undefined;
  beforeAll(async () => {
    journal = await Journal.open(db.url);
  });
  afterAll(async () => journal?.close());
  return {
    get journal() {
      if (journal === undefined)
        throw new Error('the journal is opened in beforeAll: read it inside tests and hooks');
      return journal;
    },
    get url() {
      return db.url;
    },
  };
}
