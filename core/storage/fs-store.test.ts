import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorsPlugin } from '../../http/errors.ts';
import { requestIdPlugin } from '../../http/request-id.ts';
import { applyZodSchemas } from '../../http/validation.ts';
import { filesRoutes } from '../../proxy/routes/files.ts';
import { newRequestId } from '../ids.ts';
import { FsStore } from './fs-store.ts';
import { storeContract } from './store-contract.ts';
import { UrlSigner } from './url-signer.ts';

let dir: string;
let app: FastifyInstance;
let store: FsStore;
let origin: string;
const signer = new UrlSigner(randomBytes(32));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mp-store-'));
  store = new FsStore(join(dir, 'media'), signer);
  app = Fastify({ genReqId: newRequestId });
  applyZodSchemas(app);
  await app.register(requestIdPlugin);
  await app.register(errorsPlugin);
  await app.register(filesRoutes, { store, signer });
  origin = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

storeContract('filesystem', () => ({ store, origin }));

describe('filesystem store', () => {
  it('the files route refuses a URL signed for another key, and a key that would leave the folder', async () => {
    await store.put('t/e.png', Buffer.from('e'), 'image/png');
    const url = new URL(await store.signedUrl('t/e.png', Date.now() + 60_000, origin));
    const other = `${origin}/files/t/f.png${url.search}`;
    expect((await fetch(other)).status).toBe(403);
    const res = await fetch(
      `${origin}/files/..%2F..%2Fetc%2Fpasswd?${signer.query('../../etc/passwd', Date.now() + 60_000)}`,
    );
    expect(res.status).toBe(403);
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('signatures are checked in constant time and bound to key and expiry', () => {
    const q = new URLSearchParams(signer.query('a/b.png', 2_000_000_000_000));
    expect(signer.check('a/b.png', q.get('expires')!, q.get('sig')!, 0)).toBe('ok');
    expect(signer.check('a/c.png', q.get('expires')!, q.get('sig')!, 0)).toBe('bad');
    expect(signer.check('a/b.png', String(Number(q.get('expires')) + 1), q.get('sig')!, 0)).toBe('bad');
    expect(signer.check('a/b.png', q.get('expires')!, q.get('sig')!, 3_000_000_000_000)).toBe('expired');
    expect(new UrlSigner(randomBytes(32)).check('a/b.png', q.get('expires')!, q.get('sig')!, 0)).toBe('bad');
  });
});
