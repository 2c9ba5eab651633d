// The console's pages as a browser and a script see them (no browser here; test/console/browser.test.ts
// drives Chromium): every page path gets the app, an unknown path opened by a browser gets the app
// with a 404 status (it draws "Page not found"), and anything else gets the JSON 404 of the API.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsoleApp } from '../../console/app.ts';
import { PAGES } from '../../console/routes/pages.ts';
import { loadConfig } from '../../core/config/index.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';

const INDEX = '<!doctype html><title>app</title><div id="root"></div>';
let server: TestRedis;
let app: FastifyInstance;
let origin: string;
let webDir: string;
beforeAll(async () => {
  server = await startRedis();
  webDir = mkdtempSync(join(tmpdir(), 'mp-web-'));
  writeFileSync(join(webDir, 'index.html'), INDEX);
  const config = loadConfig({
    REDIS_URL: server.url,
    MODELPLANE_KEK: randomBytes(32).toString('hex'),
    CONSOLE_REQUEST_TIMEOUT_MS: '1000',
  });
  app = await buildConsoleApp({ config, redis: server.client(), logger: false, webDir });
  origin = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await app?.close();
  await server?.stop();
  rmSync(webDir, { recursive: true, force: true });
});

const html = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };

describe('pages', () => {
  it.each([...PAGES, '/invite/abc'])('%s is the app, with the security headers', async (path) => {
    const res = await fetch(`${origin}${path}`, { headers: html });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(INDEX);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
  });

  it('an unknown path opened by a browser is the app with a 404 status, its headers as a page’s', async () => {
    const res = await fetch(`${origin}/nowhere/at/all?x=1`, { headers: html });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toBe(INDEX);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('an unknown path asked by a script, an unknown /api/ path, and a POST get the JSON 404', async () => {
    for (const [method, path, headers] of [
      ['GET', '/nowhere', { accept: 'application/json' }],
      ['GET', '/api/nowhere', html],
      ['POST', '/nowhere', html],
    ] as const) {
      const res = await fetch(`${origin}${path}`, { method, headers });
      expect([method, path, res.status]).toEqual([method, path, 404]);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found');
    }
  });
});

describe('slow clients', () => {
  /** Writes `sent` on a raw socket, then waits: what comes back before the server closes it, and when. */
  const hold = (sent: string) =>
    new Promise<{ answer: string }>((resolve, reject) => {
      const { port } = new URL(origin);
      const socket = connect(Number(port), '127.0.0.1', () => socket.write(sent));
      let answer = '';
      socket.on('data', (d) => {
        answer += d.toString('latin1');
      });
      socket.on('close', () => resolve({ answer }));
      socket.on('error', reject);
      setTimeout(() => {
        socket.destroy();
        reject(new Error(`still open after 10 s; got ${JSON.stringify(answer)}`));
      }, 10_000);
    });

  it.each([
    ['headers that never end', 'GET /api/session HTTP/1.1\r\nHost: x\r\n'],
    [
      'a body that never comes',
      'POST /api/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
    ],
  ])('%s: a 408 in the error shape with a request id, then the socket is closed', async (_name, sent) => {
    const { answer } = await hold(sent); // hold fails if the socket is still open after 10 s
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toMatch(/\r\nX-Request-Id: req_[0-9a-f]{24}\r\n/i);
    expect(answer).toContain('"code":"request_timeout"');
  });
});
