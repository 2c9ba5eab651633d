import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { ReplyError } from 'ioredis';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ClientClosedError } from './client-closed.ts';
import { errorsPlugin } from './errors.ts';

async function appLogging(thrown: () => unknown, dialect: 'openai' | 'messages' = 'openai') {
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const app = Fastify({ loggerInstance: pino({ level: 'info' }, stream) });
  await app.register(errorsPlugin);
  app.get('/x', { config: { dialect } }, async () => {
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

// Issue 38: what a Redis Cluster shard says while its primary fails over (core/redis/unavailable.ts
// has every case): the call did nothing, so it is a retryable 500 with Retry-After in the route's
// dialect, and a warning that Redis is unavailable — no "request failed" at error level.
describe.each([
  ['CLUSTERDOWN', () => new ReplyError('CLUSTERDOWN The cluster is down')],
  ['TRYAGAIN', () => new ReplyError('TRYAGAIN Multiple keys request during rehashing of slot')],
  [
    'MOVED after the redirections ran out',
    () => new Error('Too many Cluster redirections. Last error: ReplyError: MOVED 5798 127.0.0.1:7001'),
  ],
  ['a lost connection', () => new Error('Connection is closed.')],
])('Redis unavailable: %s', (_, thrown) => {
  it('ERR-3 is a retryable 500 with Retry-After in the OpenAI shape, logged as Redis unavailable', async () => {
    const { res, lines } = await appLogging(thrown, 'openai');
    expect(res.statusCode).toBe(500);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.headers['x-should-retry']).toBeUndefined();
    expect(res.json().error).toMatchObject({ type: 'server_error', code: 'server_error' });
    expect(res.json().error.message).toMatch(/Retry shortly/);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([[40, 'Redis unavailable; answered a retryable 500']]);
  });

  it('ERR-3 is a retryable 500 with Retry-After in the Messages shape', async () => {
    const { res, lines } = await appLogging(thrown, 'messages');
    expect(res.statusCode).toBe(500);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.headers['x-should-retry']).toBeUndefined();
    expect(res.json()).toMatchObject({ type: 'error', error: { type: 'api_error', code: 'server_error' } });
    expect(lines.map((l) => l.level)).toEqual([40]);
  });
});
