// The console's web app, built once for every test file that serves it. Two files (the browser
// suite and the Playground suite) used to run `vite build` each in their own set-up; run side by
// side, one build emptied console/web/dist while the other file's console was starting, which then
// answered every page 503 "not built" (a CI failure). Builds are now serialised by a lock directory
// and skipped when dist/ already holds a build of the same sources.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'vite';

const web = new URL('../../console/web/', import.meta.url).pathname;
const stampFile = join(web, 'dist', '.modelplane-build');
const lockDir = join(web, '.build-lock');
/** A lock older than this was left by a killed run (a build takes well under a minute). */
const STALE_LOCK_MS = 5 * 60_000;

/** A digest of everything the bundle is made from (sources, page, config, and the mode). */
function sourcesDigest(): string {
  const hash = createHash('sha256').update(process.env.NODE_ENV ?? '');
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      if (name === 'dist' || name.startsWith('.')) continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else hash.update(path).update(readFileSync(path));
    }
  };
  walk(web);
  return hash.digest('hex');
}

function readStamp(): string | null {
  try {
    return readFileSync(stampFile, 'utf8');
  } catch {
    return null;
  }
}

async function lock(): Promise<void> {
  for (;;) {
    try {
      mkdirSync(lockDir);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const held = statSync(lockDir, { throwIfNoEntry: false });
      if (held && Date.now() - held.mtimeMs > STALE_LOCK_MS)
        rmSync(lockDir, { recursive: true, force: true });
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** Builds console/web/dist unless it already holds a build of today's sources; safe across test files. */
export async function ensureConsoleWeb(): Promise<void> {
  const digest = sourcesDigest();
  if (readStamp() === digest) return;
  await lock();
  try {
    if (readStamp() === digest) return; // built by another file while this one waited
    await build({ configFile: join(web, 'vite.config.ts'), logLevel: 'error' });
    writeFileSync(stampFile, digest);
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}
