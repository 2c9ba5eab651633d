// The one id generator of every part (SPEC "Errors" 1 for request ids). Ids are drawn from a pool
// of random bytes refilled 1024 ids at a time: one crypto call per id was a measurable share of the
// proxy's CPU (a request mints two: its request id and its hold id).
import { randomFillSync } from 'node:crypto';

const pool = Buffer.alloc(12 * 1024);
let offset = pool.length;

function pooledHex(bytes: number): string {
  if (offset + bytes > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + bytes);
  offset += bytes;
  return hex;
}

/** `req_` + 24 lowercase hex (SPEC "Errors" 1); also fastify's `genReqId`. */
export const newRequestId = (): string => `req_${pooledHex(12)}`;

/** `<prefix>_` + 24 lowercase hex: the Messages dialect's message and tool-use ids (`msg_`, `toolu_`). */
export const newLongId = (prefix: string): string => `${prefix}_${pooledHex(12)}`;
export const REQUEST_ID_PATTERN = /^req_[0-9a-f]{24}$/;

/** `<prefix>_` + 16 lowercase hex: account, key, user, hold, video ids. */
export const newId = (prefix: string): string => `${prefix}_${pooledHex(8)}`;
