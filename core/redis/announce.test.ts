// Announcements against a real Redis: the change returns once every receiver applied it, and a
// receiver that never answers costs a bounded wait, not a hung admin.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { acknowledge, announce, parseAnnouncement } from './announce.ts';
import { onMessage, type Redis, subscribe } from './client.ts';

let server: TestRedis;
let redis: Redis;
const subscribers: Redis[] = [];
beforeAll(async () => {
  server = await startRedis();
  redis = server.client();
});
afterAll(async () => {
  for (const s of subscribers) s.disconnect();
  await server.stop();
});

/** A receiver that applies a payload after `delayMs` (a busy replica) and acknowledges unless told not to. */
async function receiver(channel: string, opts: { delayMs: number; acks: boolean }): Promise<string[]> {
  const applied: string[] = [];
  const sub = server.client();
  subscribers.push(sub);
  onMessage(sub, (_, message) => {
    const { nonce, payload } = parseAnnouncement(message);
    setTimeout(() => {
      applied.push(payload);
      if (opts.acks) void acknowledge(redis, nonce);
    }, opts.delayMs);
  });
  await subscribe(sub, channel);
  return applied;
}

describe('announce', () => {
  it('KEY-6 returns only after every receiver applied the change, however slow', async () => {
    const fast = await receiver('t:both', { delayMs: 0, acks: true });
    const slow = await receiver('t:both', { delayMs: 150, acks: true });
    const result = await announce(redis, 't:both', 'hash-1');
    expect(result).toEqual({ receivers: 2, acknowledged: 2 });
    expect(fast).toEqual(['hash-1']);
    expect(slow).toEqual(['hash-1']);
  });

  it('a receiver that never acknowledges costs the bounded wait only', async () => {
    const silent = await receiver('t:silent', { delayMs: 0, acks: false });
    const result = await announce(redis, 't:silent', 'hash-2', 100);
    expect(result).toEqual({ receivers: 1, acknowledged: 0 });
    expect(silent).toEqual(['hash-2']);
  });

  it('nobody listening: nothing to wait for', async () => {
    expect(await announce(redis, 't:nobody', 'x', 60_000)).toEqual({ receivers: 0, acknowledged: 0 });
  });

  it('a payload keeps its spaces; a message without a nonce is all payload', () => {
    expect(parseAnnouncement('n1 acct a b')).toEqual({ nonce: 'n1', payload: 'acct a b' });
    expect(parseAnnouncement('deadbeef')).toEqual({ nonce: null, payload: 'deadbeef' });
  });
});
