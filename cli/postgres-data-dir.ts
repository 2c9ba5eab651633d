// Where a PostgreSQL of our own keeps its data when we are root (issue 40 item 1). PostgreSQL
// refuses to run as root, so it runs as another user, who must be able to enter every folder above
// its data. A clone in root's home (mode 700, the most common place: `git clone … ~/modelplane`)
// has one that user cannot enter. Then the data goes to a folder of that user's own instead — in
// its home (Debian's postgres user: /var/lib/postgresql), else under /var/tmp — one per asked-for
// folder (named by it, so two clones never share a server's data), and the asked-for folder
// becomes a link to it, so the clone still says where its data is and the next start finds it.
import { createHash } from 'node:crypto';
import {
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmdirSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

export interface ServerUser {
  uid: number;
  gid: number;
  name: string;
  home: string;
}

/** Whether others may pass through `d` (one still to be made will be: mkdir's default mode). */
const othersEnter = (d: string) => ((statSync(d, { throwIfNoEntry: false })?.mode ?? 0o755) & 0o001) !== 0;

/** The first folder above `dir` that other users cannot enter, or null. */
export function closedAncestor(dir: string, canEnter = othersEnter): string | null {
  for (let d = dirname(dir); d !== dirname(d); d = dirname(d)) if (!canEnter(d)) return d;
  return null;
}

/** The folder for `asked`'s data among the server user's own: named by the asked path, so one per clone. */
export function relocatedName(asked: string): string {
  const tag = createHash('sha256').update(asked).digest('hex').slice(0, 12);
  const clone = basename(dirname(dirname(asked))) || 'root';
  return `${clone}-${basename(asked)}-${tag}`.replace(/[^A-Za-z0-9._-]/g, '_');
}

/**
 * The data folder the server (running as `user`) uses for `asked`: `asked` itself when the user
 * can reach it, else a folder of the user's own that `asked` is made a link to. `say` is told why.
 */
export function reachableDataDir(asked: string, user: ServerUser, say: (line: string) => void): string {
  if (lstatSync(asked, { throwIfNoEntry: false })?.isSymbolicLink()) return realpathSync(asked);
  const closed = closedAncestor(asked);
  if (closed === null) return asked;
  if (existsSync(join(asked, 'PG_VERSION')))
    throw new Error(
      `PostgreSQL runs as ${user.name}, who cannot enter ${closed} (mode ${(statSync(closed).mode & 0o777).toString(8)}), and its data is already in ${asked}: open ${closed} to other users (chmod o+x) or set DATABASE_URL`,
    );
  const base = ownedHome(user) ?? '/var/tmp/modelplane-postgres';
  mkdirSync(base, { recursive: true, mode: 0o755 });
  if (closedAncestor(join(base, 'x')) !== null)
    throw new Error(
      `PostgreSQL runs as ${user.name}, who can enter neither ${closed} nor ${base}: set DATABASE_URL`,
    );
  const data = join(base, relocatedName(asked));
  mkdirSync(data, { recursive: true, mode: 0o700 });
  chownSync(data, user.uid, user.gid);
  // An empty folder left by an earlier attempt gives way to the link.
  if (existsSync(asked) && readdirSync(asked).length === 0) rmdirSync(asked);
  mkdirSync(dirname(asked), { recursive: true });
  symlinkSync(data, asked);
  say(
    `PostgreSQL runs as ${user.name}, who cannot enter ${closed}: its data is in ${data} (${asked} links there)`,
  );
  return data;
}

/** The user's home when it is a folder of its own that others can pass through, else null. */
function ownedHome(user: ServerUser): string | null {
  const st = statSync(user.home, { throwIfNoEntry: false });
  if (!st?.isDirectory() || st.uid !== user.uid || closedAncestor(join(user.home, 'x')) !== null) return null;
  const dir = join(user.home, 'modelplane');
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  chownSync(dir, user.uid, user.gid);
  return dir;
}

/** The user the server runs as: ourselves (undefined), or, as root, `postgres` (else `nobody`). */
export function serverUser(): ServerUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const passwd = readFileSync('/etc/passwd', 'utf8').split('\n');
  for (const name of ['postgres', 'nobody']) {
    const line = passwd.find((l) => l.startsWith(`${name}:`));
    if (line) {
      const [, , uid, gid, , home] = line.split(':');
      return { uid: Number(uid), gid: Number(gid), name, home: home ?? '/nonexistent' };
    }
  }
  throw new Error('running as root, and there is no postgres or nobody user to run PostgreSQL as');
}
