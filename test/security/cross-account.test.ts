// Every console route, walked from the app's own route table (so a route added later is covered
// without editing this file): none answers without a session, none changes anything without the
// session's CSRF token, and none lets one account read or change another's keys, usage, billing,
// members or invitations (issue "Console", "Console API tests"). Part of the standing security
// suite (issue 24).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metering } from '../../core/billing/index.ts';
import { Batches } from '../../core/jobs/batches.ts';
import { type ConsoleHarness, type Person, type Signed, startConsole } from '../console/harness.ts';
import { journalForFile } from '../helpers/postgres.ts';

// With the durable journal, so the routes that need it (calls one by one) answer for real: a
// console without one would 404 them for Ann too, and the test would prove nothing of them.
const db = journalForFile();
let h: ConsoleHarness;
beforeAll(async () => {
  h = await startConsole({}, { journal: db.journal });
});
afterAll(async () => h?.stop());

/** Routes that are public on purpose, with why. */
const PUBLIC = new Map([
  ['POST /api/session', 'sign-in'],
  ['GET /api/session', 'tells whether the browser is signed in ({"signedIn": false} without a session)'],
  ['GET /api/invitations/:token', 'the link’s token is the credential'],
  [
    'POST /api/invitations/accept',
    'the link’s token is the credential (a signed-in acceptance checks CSRF itself)',
  ],
]);

const apiRoutes = () =>
  h.app.routeTable.filter((r) => r.url.startsWith('/api/') && !PUBLIC.has(`${r.method} ${r.url}`));

describe('guards on every route', () => {
  it('the route table holds the console API (a guard test over nothing proves nothing)', () => {
    expect(apiRoutes().length).toBeGreaterThan(15);
  });

  it('no route answers without a session (401), whatever the body', async () => {
    for (const r of apiRoutes()) {
      const url = r.url.slice('/api'.length).replace(/:(\w+)/g, 'x');
      const res = await h.call(null, r.method, url, r.method === 'GET' ? undefined : {});
      expect([r.method, r.url, res.status]).toEqual([r.method, r.url, 401]);
    }
  });

  it('no route changes state without the CSRF token, or with a wrong one (403)', async () => {
    const owner = await h.newOwner('Csrf');
    const s = await h.session(owner);
    for (const r of apiRoutes()) {
      if (r.method === 'GET') continue;
      const url = r.url.slice('/api'.length).replace(/:(\w+)/g, 'x');
      for (const sent of [null, `${s.csrf}x`]) {
        const res =
          sent === null
            ? await h.call(s, r.method, url, {}, false)
            : await h.call({ ...s, csrf: sent }, r.method, url, {});
        expect([r.method, r.url, res.status]).toEqual([r.method, r.url, 403]);
      }
    }
    // The session itself still works: no refused call signed it out.
    expect((await h.call(s, 'GET', '/session')).status).toBe(200);
  });
});

describe("one account never reaches another's things", () => {
  let ann: Person;
  let annS: Signed;
  let bobS: Signed;
  /** Ann's real ids, by route parameter name. */
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    ann = await h.newOwner('Ann Co');
    annS = await h.session(ann);
    const annMember = await h.newMember(ann.accountId, 'ann-member');
    const bob = await h.newOwner('Bob Co');
    bobS = await h.session(bob);
    const key = await h.json<{ key: { id: string } }>(annS, 'POST', '/keys', { name: 'ann key' });
    const inv = await h.json<{ invitation: { id: string } }>(annS, 'POST', '/team/invitations', {
      email: 'pending@ann.example',
    });
    const metering = new Metering(h.redis);
    await metering.topUp({
      accountId: ann.accountId,
      topUpId: 'ann-credit',
      amount: 5_000_000_000,
    });
    // One call of Ann's, so her request id names something real.
    const requestId = 'req_ann_call';
    await metering.reserve({
      accountId: ann.accountId,
      holdId: requestId,
      min: 1,
      max: 1_000_000,
      ttlMs: 60_000,
    });
    await metering.settle({
      accountId: ann.accountId,
      holdId: requestId,
      cost: 1_000,
      usage: {
        keyId: key.key.id,
        model: 'Org/Chat-1',
        kind: 'chat',
        inputTokens: 3,
        outputTokens: 2,
        requestId,
      },
    });
    expect((await h.call(annS, 'GET', `/usage/calls/${requestId}`)).status).toBe(200);
    ids.requestId = requestId;
    ids.id = key.key.id;
    ids.userId = annMember.userId;
    ids.invitationId = inv.invitation.id;
    ids.accountId = ann.accountId;
    // A running batch of Ann's (the Batches page lists, downloads and cancels them).
    ids.batchId = 'batch_ann_running';
    await new Batches(h.redis).create(ann.accountId, ids.batchId, {
      id: ids.batchId,
      endpoint: '/v1/chat/completions',
      status: 'in_progress',
      created_at: Math.floor(Date.now() / 1000),
      total: 1,
      key_id: key.key.id,
    });
  });

  /** Which of Ann's ids a parameter takes, per route; a new route with parameters must be added. */
  const paramFor = (url: string, name: string): string => {
    if (url.startsWith('/api/team/invitations/')) return ids.invitationId!;
    if (url.startsWith('/api/batches/')) return name === 'kind' ? 'output' : ids.batchId!;
    const v = ids[name];
    if (v === undefined) throw new Error(`add ${url} (:${name}) to the cross-account test`);
    return v;
  };

  it("Bob's session gets 404 (or 403) for every route given Ann's ids, and Ann's things are unchanged", async () => {
    const before = await snapshot();
    const withParams = apiRoutes().filter((r) => r.url.includes(':'));
    expect(withParams.length).toBeGreaterThan(4);
    for (const r of withParams) {
      const url = r.url.replace(/:(\w+)/g, (_m, name: string) => paramFor(r.url, name));
      const body =
        r.method === 'GET' || r.method === 'DELETE'
          ? undefined
          : { revokeKeys: true, role: 'member', spendLimit: '1' };
      const res = await h.call(bobS, r.method, url.slice('/api'.length), body);
      expect([r.method, r.url, [403, 404].includes(res.status)]).toEqual([r.method, r.url, true]);
    }
    // Reads that take an id in the query or body instead.
    const usage = await h.json<{ rows: unknown[] }>(bobS, 'GET', `/usage?group=key&keyId=${ids.id}`);
    expect(usage.rows).toEqual([]);
    const calls = await h.json<{ data: unknown[] }>(bobS, 'GET', `/usage/calls?keyId=${ids.id}`);
    expect(calls.data).toEqual([]);
    const switched = await h.call(bobS, 'POST', '/session/account', { accountId: ann.accountId });
    expect(switched.status).toBe(404);
    expect(await snapshot()).toEqual(before);
  });

  async function snapshot() {
    const [keys, team, billing, batches] = await Promise.all([
      h.json<unknown>(annS, 'GET', '/keys'),
      h.json<unknown>(annS, 'GET', '/team'),
      h.json<unknown>(annS, 'GET', '/billing'),
      h.json<unknown>(annS, 'GET', '/batches'),
    ]);
    return { keys, team, billing, batches };
  }
});
