import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ClientClosedError } from './client-closed.ts';
import { errorsPlugin } from './errors.ts';

async function appLogging(thrown: () => unknown) {
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const app = Fastify({ loggerInstance: pino({ level: 'info' }, stream) });
  await app.register(errorsPlugin);
  app.get('/x', async () => {
    throw thrown();
  });
  const res = await app.inject({ method: 'GET', url: '/x' });
  await app.close();
  // fastify's own per-request lines aside
  const ours = lines.filter((l) => l.msg !== 'incoming request' && l.msg !== 'request completed');
  return { res, lines: ours };
}

describe('error logging', () => {
  it('a client that left before its answer is logged at info, not as a failure', async () => {
    const { lines } = await appLogging(() => new ClientClosedError());
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [30, 'client closed the connection before the answer'],
    ]);
  });

  it('ERR-2 any other unexpected error is logged at error level and answered 500 server_error', async () => {
    const { res, lines } = await appLogging(() => new Error('boom'));
    expect(res.statusCode).toBe(500);
    expect(res.json().error.code).toBe('server_error');
    expect(lines.map((l) => [l.level, l.msg])).toEqual([[50, 'request failed']]);
  });
});
