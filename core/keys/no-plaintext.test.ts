// Reads back EVERY key and value in Redis after a full key lifecycle and proves that no secret is
// stored in clear anywhere: not as a value, a hash field, a set member, a list or stream entry.
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { redisForFile } from '../../test/helpers/redis-per-file.ts';
import { Accounts } from '../accounts/accounts.ts';
import { Team } from '../accounts/team.ts';
import { Users } from '../accounts/users.ts';
import { ApiKeys } from './store.ts';

const r = redisForFile();

/** Every key name and every string held by it, whatever the type. */
async function dumpAll(): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, names] = await r.redis.scan(cursor, 'COUNT', 1000);
    cursor = next;
    for (const name of names) {
      out.push(name);
      const type = await r.redis.type(name);
      if (type === 'string') out.push((await r.redis.get(name)) ?? '');
      else if (type === 'hash') out.push(...Object.entries(await r.redis.hgetall(name)).flat());
      else if (type === 'set') out.push(...(await r.redis.smembers(name)));
      else if (type === 'zset') out.push(...(await r.redis.zrange(name, 0, -1, 'WITHSCORES')));
      else if (type === 'list') out.push(...(await r.redis.lrange(name, 0, -1)));
      else if (type === 'stream') out.push(...(await r.redis.xrange(name, '-', '+')).flat(2));
      else throw new Error(`unexpected redis type ${type} for ${name}`);
    }
  } while (cursor !== '0');
  return out;
}

it('no secret, password or invitation token appears in plain text anywhere in Redis', async () => {
  const keys = new ApiKeys(r.redis, { brand: 'service', kek: randomBytes(32) });
  const accounts = new Accounts(r.redis);
  const users = new Users(r.redis);
  const password = 'correct horse battery staple';
  const account = await accounts.create({ name: 'Acme', country: 'DE' });
  const user = await users.create({ email: 'dev@acme.test', password, accountId: account.id });
  const team = new Team(r.redis);
  await team.add(account.id, user.id, 'owner');
  const { token: inviteToken } = await team.invite(account.id, {
    email: 'new@acme.test',
    role: 'member',
    invitedBy: user.id,
  });

  const secrets: string[] = [];
  const minted = await keys.ensureDefaultKey(account.id);
  secrets.push(minted!.secret);
  for (let i = 0; i < 5; i++)
    secrets.push((await keys.create(account.id, { name: `k${i}`, createdBy: user.id })).secret);
  const legacy = 'sk-abc123legacysecretvalue987';
  const imported = await keys.importLegacy(account.id, { name: 'legacy', secret: legacy });
  secrets.push(legacy);
  secrets.push((await keys.rotate(account.id, imported.id)).secret);
  const listed = await keys.list(account.id);
  secrets.push((await keys.rotate(account.id, listed[1]!.id)).secret);
  await keys.delete(account.id, listed[2]!.id);
  await team.add(account.id, 'user_other_owner', 'owner');
  await team.remove(account.id, user.id, { revokeKeys: true });
  secrets.push(inviteToken);

  const dump = await dumpAll();
  expect(dump.length).toBeGreaterThan(20);
  // The random part alone (48 hex) must not leak either, nor a long run of it.
  const needles = [
    password,
    ...secrets,
    ...secrets.map((s) => s.slice(-32)),
    ...secrets.map((s) => s.slice(0, -4)),
  ];
  for (const value of dump) {
    for (const needle of needles)
      expect(value, `secret material in redis value ${value}`).not.toContain(needle);
  }
});
