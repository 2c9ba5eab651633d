import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CatalogueEntryInput } from '../../core/catalogue/entry.ts';
import { FencedCatalogue, isStaleTerm } from '../../core/catalogue/fence.ts';
import { CatalogueStore } from '../../core/catalogue/store.ts';
import type { Redis } from '../../core/redis/client.ts';
import { globalKeys } from '../../core/redis/keyspace.ts';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { CatalogueWriter, NotLeadingError } from './catalogue-writer.ts';

let server: TestRedis;
let redis: Redis;
let store: CatalogueStore;
const fenced = () => new CatalogueWriter(store, new FencedCatalogue(redis));

beforeAll(async () => {
  server = await startRedis();
  redis = server.client();
  store = new CatalogueStore(redis);
});
afterAll(async () => {
  await server.stop();
});
beforeEach(async () => {
  await redis.del(globalKeys.catalogue, globalKeys.catalogueFence);
});

const entry = (input: string, source = 'Model/default/chat'): CatalogueEntryInput => ({
  id: 'Acme/Chat',
  kind: 'chat',
  pricing: { USD: { input } },
  created: 1,
  source,
});
const err = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('CatalogueWriter, fenced', () => {
  it('writes nothing without a term: not leading is refused before Redis is asked', async () => {
    const w = fenced();
    expect(await err(w.put(entry('1')))).toBeInstanceOf(NotLeadingError);
    await w.lead(3);
    expect(await w.put(entry('1'))).toBe(true);
    expect(await w.put(entry('1'))).toBe(false); // unchanged: no write, no announcement
    w.follow();
    expect(await err(w.remove('acme/chat', 'Model/default/chat'))).toBeInstanceOf(NotLeadingError);
    expect(await store.get('acme/chat')).not.toBeNull();
  });

  it('a newer term deposes the old one at its claim: every write of the old term is refused by Redis', async () => {
    const old = fenced();
    const next = fenced();
    await old.lead(3);
    await old.put(entry('1'));
    await next.lead(4);
    expect(await next.newestTerm()).toBe(4);
    expect(await err(old.put(entry('0.5')))).toSatisfy(isStaleTerm);
    expect(await err(old.remove('Acme/Chat', 'Model/default/chat'))).toSatisfy(isStaleTerm);
    expect(await err(old.removeOrphans('Model/', () => false))).toSatisfy(isStaleTerm);
    expect((await store.get('acme/chat'))?.pricing.USD).toEqual({ input: '1' });
    // The new term removes only what its source wrote.
    expect(await next.remove('Acme/Chat', 'Model/default/other')).toBe(false);
    expect(await next.removeOrphans('Model/', () => false)).toEqual(['Acme/Chat']);
  });

  it('unfenced (the local runtime): writes without a term', async () => {
    const w = new CatalogueWriter(store);
    expect(await w.put(entry('2', 'local:x.yaml'))).toBe(true);
    expect(await w.newestTerm()).toBe(0);
    expect(await w.remove('acme/chat', 'local:x.yaml')).toBe(true);
  });
});
