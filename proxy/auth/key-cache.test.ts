import { describe, expect, it } from 'vitest';
import { hashSecret } from '../../core/keys/index.ts';
import {
  KeyCache,
  KeyInvalidatedError,
  type KeyLease,
  type Principal,
  STALE_WHILE_UNAVAILABLE_MS,
} from './key-cache.ts';

const principal = (secret: string): Principal => ({
  accountId: 'acct_1',
  keyId: 'key_1',
  secretHash: hashSecret(secret),
  currency: 'USD',
  grants: new Set(),
  spendLimit: null,
});

function setup(valid: Set<string>, ttlMs = 1000) {
  const now = { t: 0 };
  let lookups = 0;
  const cache = new KeyCache({
    ttlMs,
    maxNegative: 2,
    now: () => now.t,
    lookup: async (s) => {
      lookups++;
      return valid.has(s) ? principal(s) : null;
    },
  });
  return { cache, now, lookups: () => lookups };
}

describe('KeyCache', () => {
  it('caches valid and invalid answers for the ttl; concurrent misses share one lookup', async () => {
    const { cache, now, lookups } = setup(new Set(['good']));
    await Promise.all([
      cache.resolve('good'),
      cache.resolve('good'),
      cache.resolve('bad'),
      cache.resolve('bad'),
    ]);
    expect(lookups()).toBe(2);
    expect(await cache.resolve('good')).not.toBeNull();
    expect(await cache.resolve('bad')).toBeNull();
    expect(lookups()).toBe(2);
    now.t = 1001;
    await cache.resolve('bad');
    expect(lookups()).toBe(3);
  });

  it('bounds the number of cached invalid answers', async () => {
    const { cache, lookups } = setup(new Set());
    for (const s of ['a', 'b', 'c']) await cache.resolve(s);
    await cache.resolve('a'); // evicted as the oldest invalid entry
    expect(lookups()).toBe(4);
  });

  it('KEY-5 invalidation drops the entry and aborts in-flight requests made with the secret', async () => {
    const valid = new Set(['good']);
    const { cache, lookups } = setup(valid);
    const p = (await cache.resolve('good'))!;
    const tracked = cache.track(p.secretHash);
    const other = cache.track(hashSecret('other'));
    valid.delete('good');
    cache.invalidate(p.secretHash);
    expect(tracked.reason).toBeInstanceOf(KeyInvalidatedError);
    expect(other.reason).toBeNull();
    expect(await cache.resolve('good')).toBeNull();
    expect(lookups()).toBe(2);
  });

  it('a lookup racing an invalidation is redone, never cached stale', async () => {
    let release: () => void = () => {};
    let calls = 0;
    const cache = new KeyCache({
      ttlMs: 1000,
      lookup: async (s) => {
        calls++;
        if (calls === 1) await new Promise<void>((r) => (release = r));
        return calls === 1 ? principal(s) : null;
      },
    });
    const pending = cache.resolve('good');
    await Promise.resolve();
    cache.invalidate(hashSecret('good'));
    release();
    expect(await pending).toBeNull();
  });

  it('KEY-5 an invalidated secret is looked up afresh and a reused lookup sees the new answer', async () => {
    const valid = new Set(['good']);
    const { cache, now, lookups } = setup(valid);
    const p = (await cache.resolve('good'))!;
    expect(await cache.resolve('good')).toBe(p); // served from the cache
    expect(lookups()).toBe(1);
    valid.delete('good');
    cache.invalidate(p.secretHash);
    expect(await cache.resolve('good')).toBeNull();
    expect(lookups()).toBe(2);
    // Revived (e.g. the same secret imported again): looked up afresh once the negative entry expires.
    valid.add('good');
    now.t = 1001;
    expect(await cache.resolve('good')).toEqual(p);
    expect(lookups()).toBe(3);
  });

  it('forgetting an account or clearing the cache makes the next request look the key up again', async () => {
    const { cache, lookups } = setup(new Set(['good']));
    await cache.resolve('good');
    cache.forgetAccount('acct_1');
    await cache.resolve('good');
    expect(lookups()).toBe(2);
    cache.clear();
    await cache.resolve('good');
    expect(lookups()).toBe(3);
  });

  it('a refreshed key (its spend limit changed) is looked up again and its in-flight requests go on', async () => {
    const { cache, lookups } = setup(new Set(['good']));
    const p = (await cache.resolve('good'))!;
    const lease = cache.track(p.secretHash);
    let died = false;
    lease.onDead = () => {
      died = true;
    };
    cache.refresh(p.secretHash);
    expect(await cache.resolve('good')).toEqual(p);
    expect(lookups()).toBe(2);
    expect(died).toBe(false);
    expect(lease.reason).toBeNull();
    expect(cache.trackedCount()).toBe(1);
    lease.untrack();
  });

  it('KEY-5 a lease calls its onDead once, aborts its signal, and untrack is idempotent', async () => {
    const { cache } = setup(new Set(['good']));
    const p = (await cache.resolve('good'))!;
    const lease: KeyLease = cache.track(p.secretHash);
    const second = cache.track(p.secretHash);
    const reasons: unknown[] = [];
    lease.onDead = (r) => reasons.push(r);
    second.untrack();
    second.untrack();
    expect(cache.trackedCount()).toBe(1);
    cache.invalidate(p.secretHash);
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toBeInstanceOf(KeyInvalidatedError);
    expect(lease.reason).toBe(reasons[0]);
    expect(cache.trackedCount()).toBe(0);
    lease.untrack();
    expect(cache.trackedCount()).toBe(0);
  });

  // Issue 38: a key's hash lives on one Redis Cluster shard; its failover must not fail the calls of
  // accounts on the other shards whose keys hash there.
  it('serves a known valid key past its expiry while Redis is unavailable, within a bound; nothing else', async () => {
    const now = { t: 0 };
    let fail: Error | null = null;
    const cache = new KeyCache({
      ttlMs: 1000,
      now: () => now.t,
      lookup: async (s) => {
        if (fail) throw fail;
        return s === 'good' ? principal(s) : null;
      },
    });
    expect(await cache.resolve('good')).not.toBeNull();
    expect(await cache.resolve('bad')).toBeNull();
    fail = new Error('CLUSTERDOWN The cluster is down');
    now.t = 1001;
    expect((await cache.resolve('good'))?.keyId).toBe('key_1');
    // An invalid answer is not kept: the error stands.
    await expect(cache.resolve('bad')).rejects.toThrow('CLUSTERDOWN');
    // Nor is anything past the bound.
    now.t = 1000 + STALE_WHILE_UNAVAILABLE_MS;
    await expect(cache.resolve('good')).rejects.toThrow('CLUSTERDOWN');
    // Nor an error that is not Redis being unavailable.
    now.t = 1001;
    fail = new Error('WRONGTYPE Operation against a key holding the wrong kind of value');
    await expect(cache.resolve('good')).rejects.toThrow('WRONGTYPE');
    // Nor a key invalidated (rotated, deleted).
    fail = new Error('CLUSTERDOWN The cluster is down');
    cache.invalidate(hashSecret('good'));
    await expect(cache.resolve('good')).rejects.toThrow('CLUSTERDOWN');
  });
});
