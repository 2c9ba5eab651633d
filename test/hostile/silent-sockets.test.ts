// Silent sockets (issue 22 item 4): connections that send no byte and never read are closed by the
// server within the configured headers bound, on the proxy and on the console. Counted on the
// server's side (server.getConnections): a client that never reads cannot see the server's FIN, so
// a client-side "still open" says nothing about the server's descriptors. This is a guard: on
// Node (20 and 24 alike) the server's connection list times a connection from its accept (a parser starts its
// clock at initialization, "protects from a DoS attack where an attacker establishes the
// connection without sending any data"), and the proxy's and console's clientError handler
// destroys the socket after the 408; the test keeps it that way across Node and fastify upgrades.
import type { Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startConsole } from '../console/harness.ts';
import { until } from '../helpers/until.ts';
import { startHarness } from '../proxy/harness.ts';

const N = 50;

const connections = (server: Server) =>
  new Promise<number>((resolve, reject) =>
    server.getConnections((err, n) => (err ? reject(err) : resolve(n))),
  );

/** N raw sockets that connect and then neither send nor read; resolves once the server has them all. */
async function silentSockets(server: Server, port: number): Promise<Socket[]> {
  const before = await connections(server);
  const sockets = Array.from({ length: N }, () => {
    const s = connect({ port, host: '127.0.0.1' });
    s.pause(); // never reads: the server's 408 and FIN stay unread in the kernel
    s.on('error', () => {});
    return s;
  });
  await until(
    async () => (await connections(server)) >= before + N,
    'the server accepted every socket',
    10_000,
  );
  return sockets;
}

async function expectClosedByServer(server: Server, port: number, boundMs: number): Promise<void> {
  const sockets = await silentSockets(server, port);
  try {
    // Generous: a loaded machine may run Node's connection check late.
    await until(
      async () => (await connections(server)) === 0,
      'the server closed every silent socket',
      boundMs * 10,
    );
    // Closed by the server, not by the test's own clients: none of them was ended or destroyed.
    for (const s of sockets) expect(s.destroyed).toBe(false);
  } finally {
    for (const s of sockets) s.destroy();
  }
}

describe('silent sockets', () => {
  it('ERR-1 the proxy closes connections that send no byte within PROXY_HEADERS_TIMEOUT_MS', async () => {
    const h = await startHarness({ PROXY_HEADERS_TIMEOUT_MS: '1000' });
    try {
      const server = h.proxy.app.server;
      await expectClosedByServer(server, Number(new URL(h.baseURL).port), 1_000);
    } finally {
      await h.stop();
    }
  }, 30_000);

  it('the console closes connections that send no byte within its headers bound', async () => {
    const c = await startConsole({ CONSOLE_REQUEST_TIMEOUT_MS: '1000' });
    try {
      const server = c.app.server;
      const port = (server.address() as { port: number }).port;
      await expectClosedByServer(server, port, 1_000);
    } finally {
      await c.stop();
    }
  }, 30_000);
});
