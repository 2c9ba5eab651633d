import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { ApiError } from '../errors.ts';
import { ApiKeys } from '../keys/index.ts';
import { Accounts } from './accounts.ts';
import { Team } from './team.ts';

let server: TestRedis;
let accounts: Accounts;
let keys: ApiKeys;
let team: Team;
beforeAll(async () => {
  server = await startRedis();
  const redis = server.client();
  accounts = new Accounts(redis);
  keys = new ApiKeys(redis, { brand: 'service', kek: randomBytes(32) });
  team = new Team(redis);
});
afterAll(async () => server.stop());

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => (e instanceof ApiError ? e : Promise.reject(e)),
  );

describe('Team', () => {
  it('a user belongs to several accounts, each with its role, seen from both sides', async () => {
    const a = await accounts.create({ name: 'A', country: 'US' });
    const b = await accounts.create({ name: 'B', country: 'DE' });
    await team.add(a.id, 'user_multi', 'owner');
    await team.add(b.id, 'user_multi', 'member');
    expect(await team.accountsOf('user_multi')).toEqual(
      expect.arrayContaining([
        { accountId: a.id, role: 'owner' },
        { accountId: b.id, role: 'member' },
      ]),
    );
    expect(await team.role(b.id, 'user_multi')).toBe('member');
    expect(await team.role(b.id, 'user_nobody')).toBeNull();
    expect((await refusal(team.add('acct_missing', 'user_multi', 'member')))?.code).toBe('not_found');
  });

  it('KEY-7 a removed member’s keys survive unless revokeKeys is ticked', async () => {
    const a = await accounts.create({ name: 'Team', country: 'US' });
    await team.add(a.id, 'user_owner', 'owner');
    await team.add(a.id, 'user_alice', 'member');
    await team.add(a.id, 'user_bob', 'member');
    const alice1 = await keys.create(a.id, { name: 'alice-1', createdBy: 'user_alice' });
    const alice2 = await keys.create(a.id, { name: 'alice-2', createdBy: 'user_alice' });
    const bob1 = await keys.create(a.id, { name: 'bob-1', createdBy: 'user_bob' });
    const shared = await keys.create(a.id, { name: 'shared', createdBy: 'user_owner' });

    expect(await team.remove(a.id, 'user_alice', { revokeKeys: false })).toEqual({ revokedKeyIds: [] });
    expect((await team.members(a.id)).map((m) => m.userId).sort()).toEqual(['user_bob', 'user_owner']);
    expect(await team.accountsOf('user_alice')).toEqual([]);
    expect(await keys.authenticate(alice1.secret)).toMatchObject({ accountId: a.id, keyId: alice1.key.id });

    const { revokedKeyIds } = await team.remove(a.id, 'user_bob', { revokeKeys: true });
    expect(revokedKeyIds).toEqual([bob1.key.id]);
    expect(await keys.authenticate(bob1.secret)).toBeNull();
    expect((await keys.get(a.id, bob1.key.id))?.status).toBe('deleted');
    for (const k of [alice1, alice2, shared]) expect(await keys.authenticate(k.secret)).not.toBeNull();
  });

  it('the last owner cannot be removed; a second owner makes it possible', async () => {
    const a = await accounts.create({ name: 'Owners', country: 'US' });
    await team.add(a.id, 'user_first', 'owner');
    expect((await refusal(team.remove(a.id, 'user_first', { revokeKeys: false })))?.param).toBe('userId');
    await team.add(a.id, 'user_second', 'owner');
    await team.remove(a.id, 'user_first', { revokeKeys: false });
    expect(await team.members(a.id)).toEqual([{ userId: 'user_second', role: 'owner' }]);
    expect((await refusal(team.remove(a.id, 'user_first', { revokeKeys: false })))?.code).toBe('not_found');
  });

  it('an invitation link works once, for its email only, and can be revoked', async () => {
    const a = await accounts.create({ name: 'Invites', country: 'US' });
    await team.add(a.id, 'user_boss', 'owner');
    const { invitation, token } = await team.invite(a.id, {
      email: 'New.Person@Example.com',
      role: 'member',
      invitedBy: 'user_boss',
    });
    expect(invitation.email).toBe('new.person@example.com');
    expect(await team.invitations(a.id)).toEqual([invitation]);
    expect(await team.invitation(token)).toEqual(invitation);

    const wrong = await refusal(team.accept(token, { id: 'user_other', email: 'other@example.com' }));
    expect(wrong?.code).toBe('forbidden');
    // Two acceptances racing: exactly one joins.
    const results = await Promise.allSettled([
      team.accept(token, { id: 'user_new', email: 'new.person@example.com' }),
      team.accept(token, { id: 'user_new', email: 'NEW.person@example.com' }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(await team.role(a.id, 'user_new')).toBe('member');
    expect(await team.invitation(token)).toBeNull();
    expect(await team.invitations(a.id)).toEqual([]);

    const second = await team.invite(a.id, {
      email: 'late@example.com',
      role: 'owner',
      invitedBy: 'user_boss',
    });
    await team.revokeInvitation(a.id, second.invitation.id);
    expect(
      (await refusal(team.accept(second.token, { id: 'user_late', email: 'late@example.com' })))?.code,
    ).toBe('not_found');
    expect(await team.invitation('not-a-token')).toBeNull();
  });

  it('refuses a bad email or role naming the field', async () => {
    const a = await accounts.create({ name: 'Bad', country: 'US' });
    expect((await refusal(team.invite(a.id, { email: 'nope', role: 'member', invitedBy: 'x' })))?.param).toBe(
      'email',
    );
    expect(
      (await refusal(team.invite(a.id, { email: 'a@b.co', role: 'admin' as 'member', invitedBy: 'x' })))
        ?.param,
    ).toBe('role');
  });
});
