// Issue 24 item 7 (docs/security.md "Roles"): a member sees every key of the account but acts
// only on keys they created, and may set or lower a spend limit on those, never raise or remove
// one; owners act on every key. Checked on every key route that acts on one key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleHarness, type Person, type Signed, startConsole } from '../console/harness.ts';

let h: ConsoleHarness;
let owner: Person;
let os: Signed;
let ms: Signed;
beforeAll(async () => {
  h = await startConsole();
  owner = await h.newOwner('Roles Co');
  os = await h.session(owner);
  ms = await h.session(await h.newMember(owner.accountId, 'member'));
});
afterAll(async () => h?.stop());

type Made = { key: { id: string; spendLimit: string | null }; secret: string };
const make = (s: Signed, name: string, spendLimit?: string) =>
  h.json<Made>(s, 'POST', '/keys', spendLimit === undefined ? { name } : { name, spendLimit });

/** Every key route that acts on one key, as [method, path, body]. */
const actions = (id: string) =>
  [
    ['GET', `/keys/${id}/secret`, undefined],
    ['POST', `/keys/${id}/rotate`, undefined],
    ['PATCH', `/keys/${id}`, { spendLimit: null }],
    ['PATCH', `/keys/${id}`, { spendLimit: '1000' }],
    ['PATCH', `/keys/${id}`, { spendLimit: '1' }],
    ['DELETE', `/keys/${id}`, undefined],
  ] as const;

describe('what a member may do with keys', () => {
  it("KEY-7 a member cannot reveal, rotate, delete or change the limit of an owner's key (403), and the key is unchanged", async () => {
    const ownersKey = await make(os, 'owner key', '5');
    for (const [method, path, body] of actions(ownersKey.key.id)) {
      const res = await h.call(ms, method, path, body);
      expect([method, path, body, res.status]).toEqual([method, path, body, 403]);
    }
    // Still the same key: same secret, same limit, still listed for the member to see.
    expect(await h.keys.authenticate(ownersKey.secret)).toMatchObject({ spendLimit: 5_000_000_000 });
    const listed = await h.json<{ data: { id: string; spendLimit: string | null; mine: boolean }[] }>(
      ms,
      'GET',
      '/keys',
    );
    // The list says which keys are the member's own (the web app offers actions on those only).
    expect(listed.data.find((k) => k.id === ownersKey.key.id)).toMatchObject({
      spendLimit: '5',
      mine: false,
    });
  });

  it('the Default key (made by no user) is an owner’s too', async () => {
    const fresh = await h.newOwner('Fresh Co');
    const fs = await h.session(fresh);
    const fm = await h.session(await h.newMember(fresh.accountId, 'fresh-member'));
    const minted = await h.json<{ minted: Made | null }>(fs, 'POST', '/keys/default');
    const id = minted.minted!.key.id;
    expect((await h.call(fm, 'GET', `/keys/${id}/secret`)).status).toBe(403);
    expect((await h.call(fs, 'GET', `/keys/${id}/secret`)).status).toBe(200);
  });

  it('on their own key a member reveals, rotates, sets and lowers a limit, but cannot raise or remove it; an owner can', async () => {
    const mine = await make(ms, 'member key');
    const id = mine.key.id;
    expect(mine.key).toMatchObject({ mine: true });
    expect((await h.call(ms, 'GET', `/keys/${id}/secret`)).status).toBe(200);
    expect((await h.call(ms, 'PATCH', `/keys/${id}`, { spendLimit: '10' })).status).toBe(200);
    expect((await h.call(ms, 'PATCH', `/keys/${id}`, { spendLimit: '4' })).status).toBe(200);
    const raise = await h.call(ms, 'PATCH', `/keys/${id}`, { spendLimit: '40' });
    expect(raise.status).toBe(403);
    expect(((await raise.json()) as { error: { param: string } }).error.param).toBe('spendLimit');
    expect((await h.call(ms, 'PATCH', `/keys/${id}`, { spendLimit: null })).status).toBe(403);
    expect((await h.keys.authenticate(mine.secret))?.spendLimit).toBe(4_000_000_000);
    // The owner lifts it.
    expect((await h.call(os, 'PATCH', `/keys/${id}`, { spendLimit: null })).status).toBe(200);
    expect((await h.call(ms, 'POST', `/keys/${id}/rotate`)).status).toBe(200);
    expect((await h.call(ms, 'DELETE', `/keys/${id}`)).status).toBe(200);
  });

  it('owners act on every key, a member’s included', async () => {
    const theirs = await make(ms, 'for the owner');
    for (const [method, path, body] of actions(theirs.key.id)) {
      const res = await h.call(os, method, path, body);
      expect([method, path, res.status]).toEqual([method, path, 200]);
    }
  });
});
