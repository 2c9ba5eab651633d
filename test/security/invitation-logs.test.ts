// Issue 24 item 1: an invitation link's token is all an acceptance needs, so it must never reach a
// log line. A console at LOG_LEVEL=info (the default) writes its real log into this test's
// stream; the link is opened (/invite/<token>), looked up (/api/invitations/<token>) and accepted,
// and no line holds the token — while lines about those very requests are there, masked.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleHarness, PASSWORD, startConsole } from '../console/harness.ts';

let h: ConsoleHarness;
let log = '';
beforeAll(async () => {
  h = await startConsole(
    { LOG_LEVEL: 'info' },
    {
      logStream: new Writable({
        write(chunk, _enc, done) {
          log += chunk.toString();
          done();
        },
      }),
    },
  );
});
afterAll(async () => h?.stop());

describe('invitation tokens never reach the logs', () => {
  it('opening, looking up and accepting a link at info level logs the requests with the token masked', async () => {
    const owner = await h.newOwner('Logged');
    const os = await h.session(owner);
    const { link } = await h.json<{ link: string }>(os, 'POST', '/team/invitations', {
      email: 'new-hire@logged.example',
      role: 'owner',
    });
    const token = link.split('/invite/')[1]!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/);

    // The page (200 with the built web app, 503 without it: either way a logged request).
    await (await fetch(`${h.origin}/invite/${token}`)).arrayBuffer();
    expect((await h.call(null, 'GET', `/invitations/${token}`)).status).toBe(200);
    expect((await h.call(null, 'GET', `/invitations/${token}?again=${token}`)).status).toBe(200);
    const accepted = await h.call(null, 'POST', '/invitations/accept', { token, password: PASSWORD });
    expect(accepted.status).toBe(200);
    // A used link is unknown now; its failed lookup is logged too (as a 404), and so are paths
    // no route matches, whose not-found answer must not carry the token into a line either.
    expect((await h.call(null, 'GET', `/invitations/${token}`)).status).toBe(404);
    expect((await h.call(null, 'GET', `/invitations/${token}/more`)).status).toBe(404);
    expect((await h.call(null, 'POST', `/invitations/${token}`, {})).status).toBe(405);

    const lines = log.split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(8);
    // The requests were logged (so the absence below means something), with the path masked.
    expect(log).toContain('"url":"/invite/[redacted]"');
    expect(log).toContain('"url":"/api/invitations/[redacted]"');
    expect(log).toContain('"url":"/api/invitations/[redacted]?again=[redacted]"');
    expect(log).toContain('"url":"/api/invitations/accept"');
    for (const line of lines)
      expect(line.includes(token), `the token is in: ${line.slice(0, 200)}`).toBe(false);
    expect(log.includes(token.slice(0, 16)), 'part of the token is in the logs').toBe(false);
  });
});
