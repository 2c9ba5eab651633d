import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { lazyChildLogger } from './request-logger.ts';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const logger = pino({ level, redact: ['req.headers.authorization'] }, stream);
  return { logger, lines };
}

describe('lazyChildLogger', () => {
  it('makes no child for lines below the level, and one with the bindings for lines at it', () => {
    const { logger, lines } = capture('warn');
    const child = vi.spyOn(logger, 'child');
    const log = lazyChildLogger(logger, { reqId: 'req_1' }, {});
    log.info({ a: 1 }, 'not written');
    log.debug('not written');
    expect(child).not.toHaveBeenCalled();
    log.error({ code: 7 }, 'written');
    log.warn('also written');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines.map((l) => [l.reqId, l.msg, l.code])).toEqual([
      ['req_1', 'written', 7],
      ['req_1', 'also written', undefined],
    ]);
  });

  it("keeps the parent's redaction and answers level questions like the child would", () => {
    const { logger, lines } = capture('info');
    const log = lazyChildLogger(logger, { reqId: 'req_2' }, {});
    expect(log.level).toBe('info');
    log.info({ req: { headers: { authorization: 'Bearer mp-live-secret' } } }, 'in');
    expect(JSON.stringify(lines)).not.toContain('mp-live-secret');
    expect(lines[0]?.reqId).toBe('req_2');
    const grand = log.child({ step: 'x' });
    grand.info('nested');
    expect(lines[1]).toMatchObject({ reqId: 'req_2', step: 'x', msg: 'nested' });
  });

  it('honours a per-route level given in the options', () => {
    const { logger, lines } = capture('warn');
    const log = lazyChildLogger(logger, { reqId: 'req_3' }, { level: 'debug' });
    log.debug('route debug');
    expect(lines.map((l) => l.msg)).toEqual(['route debug']);
  });

  it('serves as fastify childLoggerFactory: request.log lines carry the request id', async () => {
    const { logger, lines } = capture('warn');
    const app = Fastify({ loggerInstance: logger, childLoggerFactory: lazyChildLogger });
    app.get('/', async (request) => {
      request.log.info('below the level');
      request.log.warn('at the level');
      return { ok: true };
    });
    const res = await app.inject({ method: 'GET', url: '/' });
    await app.close();
    expect(res.statusCode).toBe(200);
    expect(lines.map((l) => l.msg)).toEqual(['at the level']);
    expect(lines[0]?.reqId).toMatch(/^req-/);
  });
});

describe('lazyChildLogger with logging off', () => {
  it("hands fastify's null logger (logger: false) its own child, and requests are answered", async () => {
    const app = Fastify({ logger: false, childLoggerFactory: lazyChildLogger });
    app.get('/', async (request) => {
      request.log.error('nowhere');
      return { ok: true };
    });
    const res = await app.inject({ method: 'GET', url: '/' });
    await app.close();
    expect(res.statusCode).toBe(200);
  });
});
