// Team, invitations, profile and account switching through the console's JSON API (issue "Console"
// items 1 and 6; SPEC "API key" rule 1): real Redis, real HTTP on loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metering } from '../../core/billing/index.ts';
import { type ConsoleHarness, PASSWORD, type Person, type Signed, startConsole } from './harness.ts';

let h: ConsoleHarness;
beforeAll(async () => {
  h = await startConsole({ CONSOLE_PUBLIC_URL: 'https://console.example.com' });
});
afterAll(async () => h?.stop());

interface Me {
  user: { id: string; email: string };
  account: { id: string; name: string; currency: string | null; role: string };
  accounts: { id: string; name: string; role: string }[];
  csrfToken: string;
}
interface Invited {
  invitation: { id: string; email: string; role: string };
  link: string;
}

const tokenOf = (link: string) => link.split('/invite/')[1]!;

async function invite(s: Signed, email: string, role = 'member'): Promise<Invited> {
  return h.json<Invited>(s, 'POST', '/team/invitations', { email, role });
}

async function acceptAsNew(token: string, password = PASSWORD): Promise<{ me: Me; s: Signed }> {
  const res = await fetch(`${h.origin}/api/invitations/accept`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token, password }),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  const me = (await res.json()) as Me;
  return { me, s: { cookie: res.headers.get('set-cookie')!.split(';')[0]!, csrf: me.csrfToken } };
}

describe('KEY-7 team members and their keys', () => {
  it('an invited member joins by the link; removal keeps their keys unless "Also revoke" is ticked', async () => {
    const owner = await h.newOwner('Keys Team');
    const os = await h.session(owner);
    const a = await invite(os, 'alice@keys.example');
    const b = await invite(os, 'bob@keys.example');
    expect(a.link).toMatch(/^https:\/\/console\.example\.com\/invite\/[A-Za-z0-9_-]{32}$/);

    const alice = await acceptAsNew(tokenOf(a.link));
    expect(alice.me.account).toMatchObject({ id: owner.accountId, role: 'member' });
    const bob = await acceptAsNew(tokenOf(b.link));
    const aliceKey = await h.json<{ key: { id: string }; secret: string }>(alice.s, 'POST', '/keys', {
      name: 'alice tool',
    });
    const bobKey = await h.json<{ key: { id: string }; secret: string }>(bob.s, 'POST', '/keys', {
      name: 'bob tool',
    });
    const ownerKey = await h.json<{ key: { id: string }; secret: string }>(os, 'POST', '/keys', {
      name: 'shared',
    });

    // The keys belong to the account: every member sees all three.
    const seen = await h.json<{ data: { id: string }[] }>(bob.s, 'GET', '/keys');
    expect(seen.data.map((k) => k.id).sort()).toEqual(
      [aliceKey.key.id, bobKey.key.id, ownerKey.key.id].sort(),
    );

    const removeAlice = await h.json<{ revokedKeyIds: string[] }>(
      os,
      'POST',
      `/team/members/${alice.me.user.id}/remove`,
      { revokeKeys: false },
    );
    expect(removeAlice.revokedKeyIds).toEqual([]);
    expect(await h.keys.authenticate(aliceKey.secret)).not.toBeNull();
    // A removed member loses the account at once, in the session they already had.
    expect((await h.call(alice.s, 'GET', '/keys')).status).toBe(401);

    const removeBob = await h.json<{ revokedKeyIds: string[] }>(
      os,
      'POST',
      `/team/members/${bob.me.user.id}/remove`,
      {
        revokeKeys: true,
      },
    );
    expect(removeBob.revokedKeyIds).toEqual([bobKey.key.id]);
    expect(await h.keys.authenticate(bobKey.secret)).toBeNull();
    expect(await h.keys.authenticate(aliceKey.secret)).not.toBeNull();
    expect(await h.keys.authenticate(ownerKey.secret)).not.toBeNull();

    const team = await h.json<{ members: { email: string; role: string; you: boolean }[] }>(
      os,
      'GET',
      '/team',
    );
    expect(team.members).toEqual([{ userId: owner.userId, email: owner.email, role: 'owner', you: true }]);
  });

  it('members use keys but only owners change the team or the profile; an account keeps an owner', async () => {
    const owner = await h.newOwner('Roles');
    const member = await h.newMember(owner.accountId, 'plain');
    const ms = await h.session(member);
    const os = await h.session(owner);
    expect((await h.call(ms, 'POST', '/keys', { name: 'mine' })).status).toBe(200);
    expect((await h.call(ms, 'GET', '/team')).status).toBe(200);
    for (const [method, path, body] of [
      ['POST', '/team/invitations', { email: 'x@y.example' }],
      ['POST', `/team/members/${owner.userId}/remove`, { revokeKeys: false }],
      ['PATCH', `/team/members/${member.userId}`, { role: 'owner' }],
      ['PUT', '/profile', { country: 'DE' }],
    ] as const) {
      const res = await h.call(ms, method, path, body);
      expect([method, path, res.status]).toEqual([method, path, 403]);
    }
    const last = await h.call(os, 'POST', `/team/members/${owner.userId}/remove`, { revokeKeys: false });
    expect(last.status).toBe(400);
    expect((await h.call(os, 'PATCH', `/team/members/${owner.userId}`, { role: 'member' })).status).toBe(400);
    expect((await h.call(os, 'PATCH', `/team/members/${member.userId}`, { role: 'owner' })).status).toBe(200);
    expect((await h.call(ms, 'PUT', '/profile', { name: 'Renamed by the new owner' })).status).toBe(200);
  });
});

describe('invitation links', () => {
  let owner: Person;
  let os: Signed;
  beforeAll(async () => {
    owner = await h.newOwner('Inviter');
    os = await h.session(owner);
  });

  it('a link shows what it offers, works once, and can be withdrawn', async () => {
    const inv = await invite(os, 'Once@Example.com', 'owner');
    const token = tokenOf(inv.link);
    const offer = await h.json<{ accountName: string; email: string; role: string; userExists: boolean }>(
      null,
      'GET',
      `/invitations/${token}`,
    );
    expect(offer).toMatchObject({
      accountName: 'Inviter',
      email: 'once@example.com',
      role: 'owner',
      userExists: false,
    });
    const listed = await h.json<{ invitations: { id: string }[] }>(os, 'GET', '/team');
    expect(listed.invitations.map((i) => i.id)).toContain(inv.invitation.id);

    const short = await h.call(null, 'POST', '/invitations/accept', { token, password: 'short' });
    expect(short.status).toBe(400);
    expect(((await short.json()) as { error: { param: string } }).error.param).toBe('password');
    const { me } = await acceptAsNew(token);
    expect(me.account.role).toBe('owner');
    expect((await h.call(null, 'GET', `/invitations/${token}`)).status).toBe(404);
    expect((await h.call(null, 'POST', '/invitations/accept', { token, password: PASSWORD })).status).toBe(
      404,
    );

    const withdrawn = await invite(os, 'never@example.com');
    expect((await h.call(os, 'DELETE', `/team/invitations/${withdrawn.invitation.id}`)).status).toBe(200);
    expect((await h.call(null, 'GET', `/invitations/${tokenOf(withdrawn.link)}`)).status).toBe(404);
  });

  it('an existing user joins a second account and switches between the two', async () => {
    const other = await h.newOwner('Second Home', 'DE');
    const inv = await invite(os, other.email);
    const token = tokenOf(inv.link);
    expect((await h.json<{ userExists: boolean }>(null, 'GET', `/invitations/${token}`)).userExists).toBe(
      true,
    );
    // Signed in as somebody else: refused; signed in as the invited user but without the CSRF token: refused.
    const strangerPerson = await h.newOwner('Stranger');
    const stranger = await h.session(strangerPerson);
    expect((await h.call(stranger, 'POST', '/invitations/accept', { token })).status).toBe(403);
    const otherSession = await h.session(other);
    expect((await h.call(otherSession, 'POST', '/invitations/accept', { token }, false)).status).toBe(403);
    const wrong = await h.call(null, 'POST', '/invitations/accept', { token, password: 'not the password' });
    expect(wrong.status).toBe(401);

    const me = await h.json<Me>(otherSession, 'POST', '/invitations/accept', { token });
    expect(me.account).toMatchObject({ id: owner.accountId, role: 'member', currency: 'USD' });
    expect(me.accounts.map((a) => a.id).sort()).toEqual([owner.accountId, other.accountId].sort());

    await h.json(otherSession, 'POST', '/keys', { name: 'made in Inviter' });
    const home = await h.json<Me>(otherSession, 'POST', '/session/account', { accountId: other.accountId });
    expect(home.account).toMatchObject({ id: other.accountId, role: 'owner', currency: 'EUR' });
    const keys = await h.json<{ data: { name: string }[] }>(otherSession, 'GET', '/keys');
    expect(keys.data.map((k) => k.name)).not.toContain('made in Inviter');
    const notMine = await h.call(otherSession, 'POST', '/session/account', {
      accountId: strangerPerson.accountId,
    });
    expect(notMine.status).toBe(404);

    // Removed from the account the session acts for: GET /session moves it to the other account.
    await h.json(otherSession, 'POST', '/session/account', { accountId: owner.accountId });
    await h.json(os, 'POST', `/team/members/${other.userId}/remove`, { revokeKeys: false });
    expect((await h.call(otherSession, 'GET', '/keys')).status).toBe(401);
    const moved = await h.json<Me>(otherSession, 'GET', '/session');
    expect(moved.account.id).toBe(other.accountId);
    expect((await h.call(otherSession, 'GET', '/keys')).status).toBe(200);
  });

  it('a user in no account cannot sign in, and is told why', async () => {
    const lonely = await h.newOwner('Lonely');
    const helper = await h.newMember(lonely.accountId, 'co-owner', 'owner');
    await h.team.remove(lonely.accountId, lonely.userId, { revokeKeys: false });
    const res = await h.signIn(lonely.email);
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/not a member/);
    expect((await h.signIn(helper.email)).status).toBe(200);
  });
});

describe('CON-13 profile', () => {
  it('the country sets the billing currency; none leaves the account unbillable; no switch while holding credit', async () => {
    const owner = await h.newOwner('Wanderer', null);
    const s = await h.session(owner);
    const me = await h.json<Me>(s, 'GET', '/session');
    expect(me.account.currency).toBeNull();
    const profile = await h.json<{ countries: { code: string; currency: string }[] }>(s, 'GET', '/profile');
    expect(profile.countries).toContainEqual({ code: 'JP', currency: 'JPY' });

    const bad = await h.call(s, 'PUT', '/profile', { country: 'XX' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('country');
    // Said in words on the Profile form (issue 48 item 10), the field in `param`.
    const unnamed = await h.call(s, 'PUT', '/profile', { name: ' ' });
    expect(((await unnamed.json()) as { error: unknown }).error).toMatchObject({
      param: 'name',
      message: 'Give the account a name.',
    });
    const set = await h.json<{ account: { country: string; currency: string } }>(s, 'PUT', '/profile', {
      country: 'jp',
    });
    expect(set.account).toMatchObject({ country: 'JP', currency: 'JPY' });

    await new Metering(h.redis).topUp({
      accountId: owner.accountId,
      topUpId: 'wanderer',
      amount: 1_000_000_000,
    });
    const locked = await h.call(s, 'PUT', '/profile', { country: 'US' });
    expect(locked.status).toBe(400);
    expect(((await locked.json()) as { error: { message: string } }).error.message).toMatch(/JPY/);
    expect((await h.json<Me>(s, 'GET', '/session')).account.currency).toBe('JPY');
  });
});
