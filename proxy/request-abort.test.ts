// The request's Cancel against a real fastify server over loopback: a client that leaves cancels
// the engine call — also when it left before the route linked the Cancel (while the proxy was
// still authenticating it), whose 'close' no listener saw.
import { connect } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../test/helpers/until.ts';
import { KeyCache, type KeyLease } from './auth/key-cache.ts';
import './plugins/auth.ts'; // the request's keyLease declaration
import { ClientClosedError } from '../http/client-closed.ts';
import { linkRequestAbort, type RequestAbort } from './request-abort.ts';

let app: FastifyInstance;
let port: number;
const keys = new KeyCache({ lookup: async () => null, ttlMs: 0 });
let linked: { abort: RequestAbort; abortedAtLink: boolean } | null = null;
let entered = false;

beforeAll(async () => {
  app = Fastify();
  app.decorateRequest('keyLease', null as unknown as KeyLease);
  app.addHook('onRequest', async (request) => {
    request.keyLease = keys.track('hash');
  });
  // `late`: the route links only once the client has gone; otherwise at once, then waits.
  app.get('/call', async (request, reply) => {
    entered = true;
    const late = (request.query as { late?: string }).late === '1';
    if (late && !reply.raw.destroyed) await new Promise((r) => reply.raw.once('close', r));
    const abort = linkRequestAbort(request, reply);
    linked = { abort, abortedAtLink: abort.cancel.aborted };
    if (!late) await new Promise((r) => abort.cancel.onAbort(r));
    abort.dispose();
    request.keyLease.untrack();
    return {};
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as { port: number }).port;
});
afterAll(async () => {
  await app?.close();
});

async function leaveMidCall(path: string): Promise<RequestAbort> {
  linked = null;
  entered = false;
  const socket = connect({ host: '127.0.0.1', port });
  await new Promise((r) => socket.once('connect', r));
  socket.write(`GET ${path} HTTP/1.1\r\nhost: x\r\n\r\n`);
  // Once the route has the request, go.
  await until(() => entered, 'the route began', 10_000);
  socket.destroy();
  await until(() => linked !== null, 'the route linked its Cancel', 10_000);
  await until(() => linked!.abort.cancel.aborted, 'the call was cancelled', 10_000);
  return linked!.abort;
}

describe('linkRequestAbort', () => {
  it('a client leaving mid-call cancels it with ClientClosedError', async () => {
    const abort = await leaveMidCall('/call');
    expect(linked!.abortedAtLink).toBe(false);
    expect(abort.cancel.reason).toBeInstanceOf(ClientClosedError);
  });

  it('a client gone before the route linked its Cancel: aborted at once, no engine call runs for nobody', async () => {
    const abort = await leaveMidCall('/call?late=1');
    expect(linked!.abortedAtLink).toBe(true);
    expect(abort.cancel.reason).toBeInstanceOf(ClientClosedError);
  });
});
