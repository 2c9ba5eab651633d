// Changes every proxy replica caches — a key rotated, deleted or re-limited, an account's currency or
// grants — are announced on pub/sub. PUBLISH returns once Redis queued the message, not once the
// replicas applied it: a request sent right after could still meet the old cached answer (a deleted
// key authenticating once more, seen in CI on a loaded machine). So each receiver acknowledges
// after applying (a counter per announcement), and `announce` returns once as many receivers as
// PUBLISH counted have — bounded by `waitMs`, so a replica that dies meanwhile cannot hang an admin.
// On Redis Cluster the announcement goes out sharded (SPUBLISH, core/redis/client.ts): plain PUBLISH
// there counts only the receiving node's subscribers, so replicas subscribed through other nodes
// would not be waited for.
import { randomBytes } from 'node:crypto';
import { publish, type Redis } from './client.ts';
import { globalKeys } from './keyspace.ts';

/** How long an announcement waits for acknowledgements by default. */
export const ANNOUNCE_WAIT_MS = 2_000;
/** Acknowledgement counters outlive any wait by far, then go. */
const ACK_TTL_MS = 60_000;

export interface Announced {
  /** Receivers PUBLISH counted. */
  receivers: number;
  /** Of those, how many acknowledged before the wait ended. */
  acknowledged: number;
}

/** Publishes `payload` on `channel` and waits until every receiver has applied it (bounded). */
export async function announce(
  redis: Redis,
  channel: string,
  payload: string,
  waitMs: number = ANNOUNCE_WAIT_MS,
): Promise<Announced> {
  const nonce = randomBytes(8).toString('hex');
  const receivers = await publish(redis, channel, `${nonce} ${payload}`);
  const acks = globalKeys.announceAcks(nonce);
  const deadline = Date.now() + waitMs;
  let acknowledged = Number((await redis.get(acks)) ?? 0);
  // Replicas answer within a millisecond or two; back off from 1 ms so a slow one costs few polls.
  for (let pause = 1; acknowledged < receivers && Date.now() < deadline; pause = Math.min(pause * 2, 25)) {
    await new Promise((r) => setTimeout(r, pause));
    acknowledged = Number((await redis.get(acks)) ?? 0);
  }
  return { receivers, acknowledged };
}

/** Splits a received announcement; a message without a nonce (an older publisher) is all payload. */
export function parseAnnouncement(message: string): { nonce: string | null; payload: string } {
  const space = message.indexOf(' ');
  if (space < 0) return { nonce: null, payload: message };
  return { nonce: message.slice(0, space), payload: message.slice(space + 1) };
}

/** A receiver applied the announcement with this nonce. */
export async function acknowledge(redis: Redis, nonce: string | null): Promise<void> {
  if (nonce === null) return;
  const key = globalKeys.announceAcks(nonce);
  await redis.multi().incr(key).pexpire(key, ACK_TTL_MS).exec();
}
