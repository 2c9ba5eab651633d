// Issue 24 items 2 and 3: sign-in throttling that a client can neither dodge nor turn against
// someone else. Clients really come from different loopback addresses (127.0.0.2, 127.0.0.3, …:
// Linux routes all of 127/8 to lo), so "another address" is the socket's, not a header.
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/index.ts';
import { type ConsoleHarness, PASSWORD, startConsole } from '../console/harness.ts';

const agents: Agent[] = [];
/** Sign-in from a given local address, with optional extra headers. */
function signInFrom(h: ConsoleHarness, from: string, email: string, password: string, headers = {}) {
  const agent = new Agent({ localAddress: from });
  agents.push(agent);
  return request(`${h.origin}/api/session`, {
    method: 'POST',
    dispatcher: agent,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ email, password }),
  }).then(async (res) => ({ status: res.statusCode, body: await res.body.text() }));
}
afterAll(async () => {
  await Promise.all(agents.map((a) => a.close()));
});

describe('sign-in lockout is per (email, address)', () => {
  let h: ConsoleHarness;
  beforeAll(async () => {
    h = await startConsole({
      CONSOLE_SIGNIN_FAILURES_PER_EMAIL: '5',
      CONSOLE_SIGNIN_FAILURES_PER_ADDRESS: '30',
    });
  });
  afterAll(async () => h?.stop());

  it("an attacker's failed sign-ins block the attacker, not the owner signing in from another address", async () => {
    const owner = await h.newOwner('Locked Out');
    for (let i = 0; i < 8; i++) {
      const res = await signInFrom(h, '127.0.0.2', owner.email, `wrong password ${i}`);
      expect(res.status).toBe(i < 5 ? 401 : 429);
    }
    // The attacker stays blocked for this email even with the right password (no oracle).
    expect((await signInFrom(h, '127.0.0.2', owner.email, PASSWORD)).status).toBe(429);
    // The owner, from elsewhere, signs in with the right password.
    const owners = await signInFrom(h, '127.0.0.3', owner.email, PASSWORD);
    expect(owners.status, owners.body).toBe(200);
    expect(JSON.parse(owners.body)).toMatchObject({ signedIn: true, user: { email: owner.email } });
  });
});

describe('X-Forwarded-For is believed only from configured load balancers', () => {
  it('by default a client cannot pick its own address: failures across emails and forged addresses hit the per-address limit', async () => {
    const h = await startConsole({ CONSOLE_SIGNIN_FAILURES_PER_ADDRESS: '6' });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) {
        const res = await signInFrom(h, '127.0.0.4', `nobody${i}@spray.example`, 'guess guess', {
          'x-forwarded-for': `203.0.113.${i + 1}`,
        });
        statuses.push(res.status);
      }
      expect(statuses).toEqual([401, 401, 401, 401, 401, 401, 429, 429]);
    } finally {
      await h.stop();
    }
  });

  it('CONSOLE_TRUSTED_PROXIES names the balancer: its X-Forwarded-For is the client address, a stranger’s is not', async () => {
    const h = await startConsole({
      CONSOLE_SIGNIN_FAILURES_PER_ADDRESS: '3',
      CONSOLE_TRUSTED_PROXIES: '127.0.0.5/32',
    });
    try {
      // Through the balancer (127.0.0.5): each forwarded client has its own count.
      for (let i = 0; i < 5; i++) {
        const res = await signInFrom(h, '127.0.0.5', `x${i}@lb.example`, 'guess guess', {
          'x-forwarded-for': `198.51.100.${i + 1}`,
        });
        expect(res.status).toBe(401);
      }
      // Straight from 127.0.0.6 (not a balancer), a forged header changes nothing.
      const direct: number[] = [];
      for (let i = 0; i < 4; i++)
        direct.push(
          (
            await signInFrom(h, '127.0.0.6', `y${i}@lb.example`, 'guess guess', {
              'x-forwarded-for': `198.51.100.${100 + i}`,
            })
          ).status,
        );
      expect(direct).toEqual([401, 401, 401, 429]);
    } finally {
      await h.stop();
    }
  });

  it('a malformed CONSOLE_TRUSTED_PROXIES stops start-up naming the variable; none is the default', () => {
    const base = { MODELPLANE_KEK: 'a'.repeat(64) };
    expect(loadConfig(base).CONSOLE_TRUSTED_PROXIES).toBe(false);
    expect(
      loadConfig({ ...base, CONSOLE_TRUSTED_PROXIES: '10.0.0.0/8, ::1' }).CONSOLE_TRUSTED_PROXIES,
    ).toEqual(['10.0.0.0/8', '::1']);
    for (const bad of ['true', '2', '10.0.0.0/33', 'lb.example'])
      expect(() => loadConfig({ ...base, CONSOLE_TRUSTED_PROXIES: bad })).toThrow(/CONSOLE_TRUSTED_PROXIES/);
  });
});
