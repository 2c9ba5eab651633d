// One key per block of 256 hash slots. A Redis Cluster primary serving a block of 256 contiguous
// slots holds that block's key, so data spread over such keys follows the cluster's own split:
// the epoch's shard keys (core/redis/epoch.ts) use it so every primary holds one, and the hold
// sweeper's expiry index (core/billing/due-index.ts) so an account's entries sit in its own block,
// almost always on the primary that holds the account — one primary's loss stops only its accounts.
import calculateSlot from 'cluster-key-slot';

const SLOTS = 16_384;
export const SLOT_BLOCKS = 64;
const BLOCK_SIZE = SLOTS / SLOT_BLOCKS;

/** The block (0..63) of the slot `key` hashes to (its hash tag, when it has one). */
export const slotBlockOf = (key: string): number => Math.floor(calculateSlot(key) / BLOCK_SIZE);

/** `name(n)` for the smallest n whose slot falls in each block, in block order. */
export function keyPerSlotBlock(name: (n: number) => string): readonly string[] {
  const keys: (string | undefined)[] = new Array(SLOT_BLOCKS).fill(undefined);
  let left = SLOT_BLOCKS;
  for (let n = 0; left > 0; n++) {
    const key = name(n);
    const block = slotBlockOf(key);
    if (keys[block] === undefined) {
      keys[block] = key;
      left--;
    }
  }
  return keys as string[];
}
