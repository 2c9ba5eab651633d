// An edit the proxy refuses part-way through its upload must reach the client as its 4xx, never as
// a connection error: the proxy stops reading, answers, closes its write side first and drains a
// bounded amount of what the client still sends (RFC 9112 §9.6, proxy/media/lingering-close.ts).
// Closing with the body unread makes the kernel reset the connection, and the openai SDK with
// retries off raised APIConnectionError (EPIPE / ECONNRESET) instead of the 400 in about a third
// of tries. The client runs on a thread of its own, as a client in another process would: in the
// proxy's own event loop it only ever reads the answer when the proxy lets it.
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { type Harness, imageModel, startHarness } from './harness.ts';

const EDIT_MODEL = 'Img/Editor';
const NO_EDIT_MODEL = 'Img/Painter-Only';

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    {},
    {
      entries: (endpoints) => [
        imageModel(EDIT_MODEL, endpoints, { edit: true }),
        imageModel(NO_EDIT_MODEL, endpoints, { perImage: '0.01' }),
      ],
    },
  );
});
afterAll(async () => {
  await h?.stop();
});

/**
 * The client: the official SDK, retries off, each refusal kind in turn. Files are a PNG signature
 * and padding (the proxy checks counts and sizes as the bytes arrive, before any engine sees them).
 */
const CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const { default: OpenAI, toFile } = require('openai');
const MB = 1024 * 1024;
const png = (bytes) => Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.alloc(bytes)]);
const file = (bytes, i) => toFile(png(bytes), i + '.png', { type: 'image/png' });
const kinds = {
  // Four 2 MB images behind a model that cannot edit: refused when 'model' arrives, 8 MB unsent.
  edit_unsupported: { model: workerData.noEdit, files: () => Promise.all([0, 1, 2, 3].map((i) => file(2 * MB, i))) },
  // Twelve quarter-MB images: refused as the eleventh begins.
  'eleventh file': { model: workerData.edit, files: () => Promise.all(Array.from({ length: 12 }, (_, i) => file(MB / 4, i))) },
  // One 22 MB image: refused on the byte past 20 MB.
  'file over 20 MB': { model: workerData.edit, files: () => Promise.all([file(22 * MB, 0)]) },
};
(async () => {
  const client = new OpenAI({ apiKey: workerData.secret, baseURL: workerData.baseURL, maxRetries: 0, timeout: 60000 });
  const names = Object.keys(kinds);
  const outcomes = [];
  for (let i = 0; i < workerData.n; i++) {
    const kind = names[i % names.length];
    const image = await kinds[kind].files();
    try {
      await client.images.edit({ model: kinds[kind].model, image, prompt: 'refused' });
      outcomes.push(kind + ': accepted');
    } catch (e) {
      outcomes.push(e instanceof OpenAI.APIError && e.status !== undefined
        ? kind + ': ' + e.status + ' ' + e.code
        : kind + ': ' + e.constructor.name + ' ' + e.message + ' (' + String(e.cause) + ' ' + String(e.cause && e.cause.cause) + ')');
    }
  }
  parentPort.postMessage(outcomes);
})().catch((e) => parentPort.postMessage(['client failed: ' + e.stack]));
`;

describe('refused image edits through the openai SDK, retries off', () => {
  it('IMG-3 IMG-4 100 refused edits (each refusal kind): 100 answers of 400 naming the refusal, no connection error', async () => {
    const a = await h.newAccount();
    const worker = new Worker(CLIENT, {
      eval: true,
      workerData: { secret: a.secret, baseURL: h.baseURL, edit: EDIT_MODEL, noEdit: NO_EDIT_MODEL, n: 100 },
    });
    const outcomes = await new Promise<string[]>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    const expected = [
      'edit_unsupported: 400 edit_unsupported',
      'eleventh file: 400 invalid_request',
      'file over 20 MB: 400 invalid_request',
    ];
    expect(outcomes).toHaveLength(100);
    expect(outcomes.filter((o, i) => o !== expected[i % 3])).toEqual([]);
    await h.settled(a.accountId);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  }, 600_000);
});
