// The Redis epoch as this replica knows it (core/redis/epoch.ts): kept in the data directory beside
// the journal, so it outlives the process exactly as the settlements owed to that Redis do. At
// start: an epoch on file must be the one Redis has; with none on file the replica adopts Redis's
// epoch, or writes the first one (a fresh install). On a cluster the epoch is on every primary
// (core/redis/epoch.ts SHARD_EPOCH_KEYS).
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from '../../core/redis/client.ts';
import { claimEpoch, readEpoch, writeShardEpochs } from '../../core/redis/epoch.ts';

const FILE = 'redis-epoch';

/** The epoch this replica serves, and what Redis has if that differs (null: nothing). */
export async function knownEpoch(
  redis: Redis,
  dataDir: string,
): Promise<{ expected: string; found: string | null; matches: boolean }> {
  const file = join(dataDir, FILE);
  const onFile = existsSync(file) ? readFileSync(file, 'utf8').trim() : null;
  if (onFile !== null && onFile !== '') {
    const found = await readEpoch(redis);
    // A cluster that has only mp:epoch (upgraded from a release without per-shard epochs) gets them.
    if (found === onFile) await writeShardEpochs(redis, onFile);
    return { expected: onFile, found, matches: found === onFile };
  }
  const epoch = await claimEpoch(redis, randomBytes(12).toString('hex'));
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, epoch);
  renameSync(tmp, file);
  return { expected: epoch, found: epoch, matches: true };
}
