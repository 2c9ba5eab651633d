// A PostgreSQL server of our own, as `make dev` and the tests run one: initdb into a data folder
// (once), then `postgres` on a loopback port with its socket inside that folder, trust auth for
// the local user only. PostgreSQL refuses to run as root, so when we are root both run as the
// `postgres` system user (Debian's package makes it), falling back to `nobody`, and the folder is
// handed to that user — placed where that user can reach it (./postgres-data-dir.ts).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';
import { reachableDataDir, serverUser } from './postgres-data-dir.ts';

export interface PostgresServer {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string;
  /** Where its data is: the folder asked for, or, as root, one its user can reach (postgres-data-dir.ts). */
  dataDir: string;
  port: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

export interface PostgresServerOptions {
  dataDir: string;
  port: number;
  /**
   * Tests: no fsync, no full-page writes. Never for data anyone keeps: a crash of the machine can
   * corrupt such a cluster.
   */
  throwaway?: boolean;
  log?: (line: string) => void;
  /**
   * Outlive this process: the server is detached, its output goes to this file, and whoever holds
   * its pid stops it (the tests' one server per run, started by whichever test file asks first).
   */
  detachedLog?: string;
}

/** Where Debian keeps the server programs (not on PATH): the newest /usr/lib/postgresql/<v>/bin. */
export function postgresBinDir(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0] !== undefined) return join(root, versions[0], 'bin');
  }
  try {
    return dirname(execFileSync('sh', ['-c', 'command -v postgres'], { encoding: 'utf8' }).trim());
  } catch {
    throw new Error(
      'PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres, no postgres on PATH): apt-get install -y postgresql, or set DATABASE_URL',
    );
  }
}

export async function startPostgres(o: PostgresServerOptions): Promise<PostgresServer> {
  const bin = postgresBinDir();
  const user = serverUser();
  // As root, a folder the server's user can reach (postgres-data-dir.ts): maybe not the one asked.
  const dataDir = user
    ? reachableDataDir(resolve(o.dataDir), user, (line) => o.log?.(line))
    : resolve(o.dataDir);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (user) chownSync(dataDir, user.uid, user.gid);
  const asUser = user ? { uid: user.uid, gid: user.gid } : {};
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    execFileSync(
      join(bin, 'initdb'),
      ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync'],
      { ...asUser, stdio: ['ignore', 'pipe', 'pipe'] },
    );
  }
  const args = [
    '-D',
    dataDir,
    '-p',
    String(o.port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    `unix_socket_directories=${dataDir}`,
  ];
  if (o.throwaway) args.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
  const out = o.detachedLog === undefined ? undefined : openSync(o.detachedLog, 'a');
  const child = spawn(join(bin, 'postgres'), args, {
    ...asUser,
    stdio: out === undefined ? ['ignore', 'pipe', 'pipe'] : ['ignore', out, out],
    detached: out !== undefined,
  });
  if (out !== undefined) {
    closeSync(out);
    child.unref();
  }
  const tail: string[] = [];
  const onLine = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) {
      if (line.trim() === '') continue;
      tail.push(line);
      if (tail.length > 8) tail.shift();
      o.log?.(line);
    }
  };
  child.stdout?.on('data', onLine);
  child.stderr?.on('data', onLine);
  const url = `postgres://postgres@127.0.0.1:${o.port}/postgres`;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(
        `postgres exited while starting: ${o.detachedLog ? readFileSync(o.detachedLog, 'utf8').slice(-800) : tail.join(' | ')}`,
      );
    const c = new pg.Client({ connectionString: url });
    c.on('error', () => {});
    try {
      await c.connect();
      await c.query('select 1');
      await c.end();
      break;
    } catch (err) {
      await c.end().catch(() => {});
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`postgres did not answer at ${url}: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    dataDir,
    port: o.port,
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGINT'); // "fast" shutdown: running transactions roll back, the data is kept
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
