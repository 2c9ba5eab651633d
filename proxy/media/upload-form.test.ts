// The upload reader on a real fastify app over loopback, with small limits so each bound is cheap
// to pass: what a good form gives, and that every bound — the whole body included — is answered
// at once with the spool deleted.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newRequestId } from '../../core/ids.ts';
import { errorsPlugin } from '../../http/errors.ts';
import { requestIdPlugin } from '../../http/request-id.ts';
import { type RawPart, rawUpload, watchConnections } from '../../test/helpers/raw-upload.ts';
import { until } from '../../test/helpers/until.ts';
import {
  acceptUploads,
  readUploadForm,
  sizeText,
  type UploadForm,
  type UploadLimits,
} from './upload-form.ts';

const LIMITS: UploadLimits = { fileBytes: 1000, files: 2, fields: 3, fieldBytes: 100, totalBytes: 1500 };

let app: FastifyInstance;
let url: string;
let root: string;
let serverSide: ReturnType<typeof watchConnections>;
let outcome: { form?: UploadForm; error?: unknown; dir?: string };
let lateEntered = false;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'mp-upload-'));
  app = Fastify({ genReqId: newRequestId });
  await app.register(requestIdPlugin);
  await app.register(errorsPlugin);
  await app.register(async (scope) => {
    acceptUploads(scope);
    scope.post('/upload', { config: { dialect: 'openai' } }, async (request, reply) => {
      const dir = join(root, request.id);
      outcome = { dir };
      try {
        outcome.form = await readUploadForm(request, reply, {
          dir,
          limits: LIMITS,
          checks: {
            field: (name) => {
              if (name === 'refuse') throw new Error('refused by the route');
            },
          },
        });
      } catch (err) {
        outcome.error = err;
        throw err;
      }
      return {
        fields: outcome.form.fields,
        files: outcome.form.files.map((f) => ({ ...f, content: readFileSync(f.path, 'latin1') })),
      };
    });
  });
  // The same reader, started only once the client has gone (as when it leaves while the route
  // still awaits the spool folder): it must answer, not wait for a body that will never end.
  await app.register(async (scope) => {
    acceptUploads(scope);
    scope.post('/upload-late', { config: { dialect: 'openai' } }, async (request, reply) => {
      lateEntered = true;
      if (!request.raw.destroyed) await new Promise((r) => request.raw.once('close', r));
      const dir = join(root, request.id);
      outcome = { dir };
      try {
        outcome.form = await readUploadForm(request, reply, { dir, limits: LIMITS });
      } catch (err) {
        outcome.error = err;
        throw err;
      }
      return {};
    });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  serverSide = watchConnections(app.server);
});
afterAll(async () => {
  await app?.close();
  rmSync(root, { recursive: true, force: true });
});

const send = (parts: RawPart[]) => rawUpload({ url, path: '/upload', headers: {}, parts, serverSide });

describe('readUploadForm', () => {
  it('keeps the fields and spools the files, whole and in order', async () => {
    const r = await send([
      { name: 'model', data: 'm' },
      { name: 'image[]', filename: 'a.png', data: 'A'.repeat(1000) },
      { name: 'image[]', filename: 'b.png', type: 'image/jpeg', data: 'B'.repeat(10) },
    ]);
    expect(r.status).toBe(200);
    const body = JSON.parse(r.body) as {
      fields: Record<string, string>;
      files: { field: string; filename: string; mimetype: string; size: number; content: string }[];
    };
    expect(body.fields).toEqual({ model: 'm' });
    expect(
      body.files.map(({ field, filename, mimetype, size }) => ({ field, filename, mimetype, size })),
    ).toEqual([
      { field: 'image[]', filename: 'a.png', mimetype: 'image/png', size: 1000 },
      { field: 'image[]', filename: 'b.png', mimetype: 'image/jpeg', size: 10 },
    ]);
    expect(body.files[0]!.content).toBe('A'.repeat(1000));
    expect(r.headers.connection).not.toBe('close');
    rmSync(outcome.dir!, { recursive: true });
  });

  it.each([
    [
      'a file one byte past its limit',
      [{ name: 'f', filename: 'a', data: 'x'.repeat(1001) }],
      /at most 1000 bytes/,
    ],
    [
      'the whole body past its limit (each file within its own)',
      [
        { name: 'f', filename: 'a', data: 'x'.repeat(900) },
        { name: 'g', filename: 'b', data: 'x'.repeat(900) },
      ],
      /body may be at most 1 KB/,
    ],
    ['a third file', [1, 2, 3].map((i) => ({ name: 'f', filename: `${i}`, data: 'x' })), /At most 2 files/],
    ['a fourth field', [1, 2, 3, 4].map((i) => ({ name: `k${i}`, data: 'v' })), /more than 3 fields/],
    [
      'a field past its limit',
      [{ name: 'prompt', data: 'x'.repeat(101) }],
      /'prompt' is longer than 100 bytes/,
    ],
    ["a route's check", [{ name: 'refuse', data: 'now' }], /server had an error/],
  ] as [string, RawPart[], RegExp][])(
    '%s: answered at once, the connection closed, the spool deleted',
    async (_what, parts, message) => {
      const r = await send(parts);
      expect(r.status).toBe(/server had/.test(message.source) ? 500 : 400);
      expect((JSON.parse(r.body) as { error: { message: string } }).error.message).toMatch(message);
      expect(r.headers['x-request-id']).toMatch(/^req_/);
      expect(r.headers.connection).toBe('close');
      expect(r.serverClosed).toBe(true);
      expect(existsSync(outcome.dir!)).toBe(false);
    },
  );

  it('a body without a boundary, or cut short, is a 400 about the body', async () => {
    const noBoundary = await app.inject({
      method: 'POST',
      url: '/upload',
      headers: { 'content-type': 'multipart/form-data' },
      payload: 'x',
    });
    expect(noBoundary.statusCode).toBe(400);
    expect(noBoundary.json().error.message).toMatch(/multipart body could not be read/);
    const short = await app.inject({
      method: 'POST',
      url: '/upload',
      headers: { 'content-type': 'multipart/form-data; boundary=b' },
      payload: '--b\r\nContent-Disposition: form-data; name="f"; filename="a"\r\n\r\nabc',
    });
    expect(short.statusCode).toBe(400);
    expect(existsSync(outcome.dir!)).toBe(false);
  });

  /** Sends a request's headers and the start of a file to `path`, and leaves the socket open. */
  const startUpload = async (path: string) => {
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(url).port) });
    await new Promise((r) => socket.once('connect', r));
    const part = `--b\r\nContent-Disposition: form-data; name="f"; filename="a"\r\n\r\n${'x'.repeat(500)}`;
    socket.write(
      `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: multipart/form-data; boundary=b\r\ncontent-length: 100000\r\n\r\n${part}`,
    );
    return socket;
  };

  it('a client that goes away mid-file leaves no spool behind', async () => {
    outcome = {};
    const socket = await startUpload('/upload');
    await until(() => outcome.dir !== undefined, 'the route began', 10_000);
    socket.destroy();
    await until(() => outcome.error !== undefined, 'the reader answered', 10_000);
    expect((outcome.error as Error).name).toBe('ClientClosedError');
    expect(existsSync(outcome.dir!)).toBe(false);
  });

  it('a client gone before the reading starts is answered too: no hung request, no spool left', async () => {
    outcome = {};
    lateEntered = false;
    const socket = await startUpload('/upload-late');
    await until(() => lateEntered, 'the route began', 10_000);
    socket.destroy();
    await until(() => outcome.error !== undefined, 'the reader answered', 10_000);
    expect((outcome.error as Error).name).toBe('ClientClosedError');
    expect(existsSync(outcome.dir!)).toBe(false);
  });

  it('sizeText names limits as a person would', () => {
    expect([sizeText(20 * 1024 * 1024), sizeText(128 * 1024), sizeText(100)]).toEqual([
      '20 MB',
      '128 KB',
      '100 bytes',
    ]);
  });
});
