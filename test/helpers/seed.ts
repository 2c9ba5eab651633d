// The least a proxy needs to serve one chat model to one key: a catalogue entry pointing at an
// engine, an account in USD with credit, and a key. Shared by the build test and the proxy
// benchmark, which start the proxy as its own process (the in-process test harness in
// test/proxy/harness.ts seeds more: several models, accounts and grants).
import { randomBytes } from 'node:crypto';
import { Accounts } from '../../core/accounts/accounts.ts';
import { Metering } from '../../core/billing/index.ts';
import { CatalogueStore, type TokenPrice } from '../../core/catalogue/index.ts';
import { ApiKeys } from '../../core/keys/index.ts';
import type { Redis } from '../../core/redis/client.ts';

export interface Seeded {
  accountId: string;
  /** The key's secret, for `Authorization: Bearer`. */
  secret: string;
  /** MODELPLANE_KEK for the proxy (hex), the key-encryption key the key was stored with. */
  kek: string;
}

export async function seedChatModelAndKey(
  r: Redis,
  o: { model: string; engineUrl: string; price: TokenPrice; credit: number; name: string },
): Promise<Seeded> {
  await new CatalogueStore(r).put({
    id: o.model,
    kind: 'chat',
    pricing: { USD: o.price },
    endpoints: [{ url: o.engineUrl }],
    created: 1,
  });
  const kek = randomBytes(32).toString('hex');
  const account = await new Accounts(r).create({ name: o.name, country: 'US' });
  await new Metering(r).topUp({ accountId: account.id, topUpId: `seed-${o.name}`, amount: o.credit });
  const keys = new ApiKeys(r, { brand: 'service', kek: Buffer.from(kek, 'hex') });
  const { secret } = await keys.create(account.id, { name: o.name });
  return { accountId: account.id, secret, kek };
}
