import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { until } from '../../test/helpers/until.ts';
import type { Redis } from '../redis/client.ts';
import { globalKeys } from '../redis/keyspace.ts';
import type { CatalogueEntryInput } from './entry.ts';
import { CatalogueSnapshot } from './snapshot.ts';
import { CatalogueStore } from './store.ts';
import { isCallableBy } from './visibility.ts';

let server: TestRedis;
let redis: Redis;
let sub: Redis;
let store: CatalogueStore;
let snapshot: CatalogueSnapshot;

beforeAll(async () => {
  server = await startRedis();
  redis = server.client();
  sub = server.client();
  store = new CatalogueStore(redis);
  await store.put(model('Acme/Chat-1'));
  snapshot = new CatalogueSnapshot(redis, { subscriber: sub, refreshMs: 60_000 });
  await snapshot.start();
});
afterAll(async () => {
  snapshot.stop();
  await sub.unsubscribe();
  await server.stop();
});

function model(id: string, over: Partial<CatalogueEntryInput> = {}): CatalogueEntryInput {
  return { id, kind: 'chat', pricing: { USD: { input: '0.15' } }, created: 1_700_000_000, ...over };
}

describe('CatalogueSnapshot', () => {
  it('CAT-2 loads at start; lookup is case-insensitive and returns the canonical id', () => {
    expect(snapshot.loaded).toBe(true);
    expect(snapshot.get('acme/chat-1')?.id).toBe('Acme/Chat-1');
    expect(snapshot.get('ACME/CHAT-1')?.id).toBe('Acme/Chat-1');
    expect(snapshot.get('acme/chat-2')).toBeUndefined();
  });

  it('follows change messages: additions, edits and removals', async () => {
    let changes = 0;
    const off = snapshot.onChange(() => changes++);
    await store.put(model('Org/Image-Gen', { kind: 'image', pricing: { USD: { perImage: '0.04' } } }));
    await until(() => snapshot.get('org/image-gen') !== undefined);
    await store.put(model('Acme/Chat-1', { availability: 'inviteOnly' }));
    await until(() => snapshot.get('acme/chat-1')?.availability === 'inviteOnly');
    await store.remove('org/image-gen');
    await until(() => snapshot.get('org/image-gen') === undefined);
    expect(changes).toBeGreaterThanOrEqual(3);
    off();
  });

  it('CAT-4 CAT-5 visibility applies to snapshot entries', async () => {
    await store.put(model('Acme/Chat-1', { availability: 'inviteOnly' }));
    await until(() => snapshot.get('acme/chat-1')?.availability === 'inviteOnly');
    const e = snapshot.get('ACME/chat-1')!;
    expect(isCallableBy(e, { currency: 'USD', grants: new Set() })).toBe(false);
    expect(isCallableBy(e, { currency: 'USD', grants: new Set(['acme/chat-1']) })).toBe(true);
    expect(isCallableBy(e, { currency: 'EUR', grants: new Set(['acme/chat-1']) })).toBe(false);
  });

  it('stops following changes after stop()', async () => {
    const other = new CatalogueSnapshot(redis, { subscriber: server.client(), refreshMs: 60_000 });
    await other.start();
    other.stop();
    await store.put(model('Late/Arrival'));
    await until(() => snapshot.get('late/arrival') !== undefined);
    expect(other.get('late/arrival')).toBeUndefined();
  });

  it('reloads when the subscriber reconnects (messages sent meanwhile were lost)', async () => {
    const flaky = server.client();
    const s = new CatalogueSnapshot(redis, { subscriber: flaky, refreshMs: 60_000 });
    await s.start();
    // Written without a change message, as if it was published while the subscriber was away.
    await redis.hset(globalKeys.catalogue, 'quiet/model', JSON.stringify(model('Quiet/Model')));
    flaky.disconnect(true);
    await until(() => s.get('quiet/model') !== undefined);
    s.stop();
    await store.remove('quiet/model');
  });

  it('keeps serving the last good copy when a refresh fails, and heals on the next one', async () => {
    const errors: unknown[] = [];
    const broken = server.client();
    const lonely = new CatalogueSnapshot(broken, {
      subscriber: server.client(),
      onError: (e) => errors.push(e),
    });
    await lonely.start();
    lonely.stop();
    const before = lonely.all().length;
    const saved = await broken.hgetall(globalKeys.catalogue);
    await broken.del(globalKeys.catalogue);
    await broken.set(globalKeys.catalogue, 'not a hash'); // HGETALL now fails with WRONGTYPE
    await lonely.refresh();
    expect(errors).toHaveLength(1);
    expect(lonely.all()).toHaveLength(before);
    await broken.del(globalKeys.catalogue);
    await broken.hset(globalKeys.catalogue, saved);
    await lonely.refresh();
    expect(lonely.all()).toHaveLength(before);
  });
});
