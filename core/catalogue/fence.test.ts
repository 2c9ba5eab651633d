import calculateSlot from 'cluster-key-slot';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import type { Redis } from '../redis/client.ts';
import { globalKeys } from '../redis/keyspace.ts';
import type { CatalogueEntryInput } from './entry.ts';
import { FencedCatalogue, isStaleTerm, StaleTermError } from './fence.ts';
import { CatalogueStore } from './store.ts';

let server: TestRedis;
let redis: Redis;
let fenced: FencedCatalogue;
let store: CatalogueStore;

beforeAll(async () => {
  server = await startRedis();
  redis = server.client();
  fenced = new FencedCatalogue(redis);
  store = new CatalogueStore(redis);
});
afterAll(async () => {
  await server.stop();
});
beforeEach(async () => {
  await redis.del(globalKeys.catalogue, globalKeys.catalogueFence);
});

const entry = (price: string): CatalogueEntryInput => ({
  id: 'Acme/Chat',
  kind: 'chat',
  pricing: { USD: { input: price } },
  created: 1_700_000_000,
});

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err: unknown) => err,
  );

describe('FencedCatalogue', () => {
  it('the fence key shares the catalogue hash slot (one script on Redis Cluster)', () => {
    expect(calculateSlot(globalKeys.catalogueFence)).toBe(calculateSlot(globalKeys.catalogue));
  });

  it('a newer term writes and raises the fence; an older term is refused and changes nothing', async () => {
    await fenced.put(entry('1'), 3);
    expect(await fenced.fence()).toBe(3);
    await fenced.put(entry('2'), 4);
    expect(await fenced.fence()).toBe(4);

    const err = await refusal(fenced.put(entry('0.5'), 3));
    expect(err).toBeInstanceOf(StaleTermError);
    expect(err).toMatchObject({ token: 3, fence: 4 });
    expect(await refusal(fenced.remove('acme/chat', 3))).toSatisfy(isStaleTerm);
    expect((await store.get('acme/chat'))?.pricing.USD).toEqual({ input: '2' });
    expect(await fenced.fence()).toBe(4);
  });

  it('a claim refuses the old term before the new one writes anything', async () => {
    await fenced.put(entry('1'), 7);
    await fenced.claim(8);
    expect(await refusal(fenced.put(entry('9'), 7))).toSatisfy(isStaleTerm);
    expect((await store.get('acme/chat'))?.pricing.USD).toEqual({ input: '1' });
    // The same term keeps writing; removal reports whether there was an entry.
    expect(await fenced.remove('ACME/CHAT', 8)).toBe(true);
    expect(await fenced.remove('acme/chat', 8)).toBe(false);
    // A claim by an older term is refused too, and does not lower the fence.
    expect(await refusal(fenced.claim(2))).toSatisfy(isStaleTerm);
    expect(await fenced.fence()).toBe(8);
  });

  it('entries are validated and stored as CatalogueStore reads them', async () => {
    await expect(fenced.put({ ...entry('1'), pricing: { usd: { input: '1' } } }, 1)).rejects.toThrow();
    await expect(fenced.put(entry('1'), -1)).rejects.toThrow(/invalid leadership term/);
    await fenced.put(entry('1.5'), 1);
    expect(await store.get('ACME/chat')).toMatchObject({ id: 'Acme/Chat', region: 'global' });
  });
});
