import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { onMessage, type Redis, subscribe } from '../redis/client.ts';
import { channels, globalKeys } from '../redis/keyspace.ts';
import type { CatalogueEntryInput } from './entry.ts';
import { CatalogueStore } from './store.ts';

let server: TestRedis;
let redis: Redis;
let sub: Redis;
let store: CatalogueStore;
const messages: string[] = [];

beforeAll(async () => {
  server = await startRedis();
  redis = server.client();
  sub = server.client();
  onMessage(sub, (channel, message) => {
    if (channel === channels.catalogueChanged) messages.push(message);
  });
  await subscribe(sub, channels.catalogueChanged);
  store = new CatalogueStore(redis);
});
afterAll(async () => {
  await sub.unsubscribe();
  await server.stop();
});
beforeEach(async () => {
  await redis.del(globalKeys.catalogue);
});

const model = (id: string, over: Partial<CatalogueEntryInput> = {}): CatalogueEntryInput => ({
  id,
  kind: 'chat',
  pricing: { USD: { input: '0.15', cachedInput: '0.075', output: '0.60' } },
  created: 1_700_000_000,
  ...over,
});

async function received(message: string): Promise<boolean> {
  for (let i = 0; i < 100 && !messages.includes(message); i++) await new Promise((r) => setTimeout(r, 10));
  return messages.includes(message);
}

describe('CatalogueStore', () => {
  it('CAT-2 ids with "/" match case-insensitively and come back in canonical spelling', async () => {
    const put = await store.put(model('Meta-Llama/Llama-3.1-8B-Instruct'));
    expect(put).toMatchObject({ availability: 'available', region: 'global', tags: [] });
    for (const asked of ['meta-llama/llama-3.1-8b-instruct', 'META-LLAMA/LLAMA-3.1-8B-INSTRUCT']) {
      expect((await store.get(asked))?.id).toBe('Meta-Llama/Llama-3.1-8B-Instruct');
    }
    expect(await store.get('meta-llama/llama-3.1-8b')).toBeNull(); // CAT-6 misspelled
  });

  it('CAT-2 a put differing only in case replaces the entry and its canonical spelling', async () => {
    await store.put(model('acme/Model'));
    await store.put(model('ACME/model', { region: 'eu' }));
    const all = await store.list();
    expect(all.map((e) => [e.id, e.region])).toEqual([['ACME/model', 'eu']]);
  });

  it('lists sorted by id and announces every change by lowercased id', async () => {
    await store.put(model('b-model'));
    await store.put(model('A-model', { kind: 'embedding' }));
    expect((await store.list()).map((e) => e.id)).toEqual(['A-model', 'b-model']);
    expect(await received('a-model')).toBe(true);
    expect(await store.remove('A-MODEL')).toBe(true);
    expect(await store.remove('A-MODEL')).toBe(false);
    expect((await store.list()).map((e) => e.id)).toEqual(['b-model']);
  });

  it('rejects an invalid entry and skips a corrupt stored one', async () => {
    await expect(store.put(model('bad', { pricing: { usd: { input: '1' } } }))).rejects.toThrow();
    await expect(store.put(model('bad', { pricing: { USD: { input: '-1' } } }))).rejects.toThrow();
    await store.put(model('good'));
    await redis.hset(globalKeys.catalogue, 'broken', '{not json', 'wrong', JSON.stringify({ id: 'wrong' }));
    expect((await store.list()).map((e) => e.id)).toEqual(['good']);
    expect(await store.get('broken')).toBeNull();
  });
});
