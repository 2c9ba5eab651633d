// Hostile and broken input (issue "Hardening"): every kind of bad request a client or an attacker
// sends gets a 4xx in its dialect's error shape, with a request id, charges nothing, loses
// nothing, and leaves the proxy serving. The table below is the inventory; raw-socket cases cover
// what fetch will not send (a bare newline in a header, duplicated auth, oversized headers). After
// every case, whatever sent it, the same check runs: no engine was asked, nothing was charged or
// held, the ledger adds up, and another client is still served.
import { connect } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { gradientPng } from '../../engines/simulator/media/png.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import {
  CHAT_MODEL,
  EMBED_MODEL,
  type Harness,
  imageModel,
  startHarness,
  videoModel,
} from '../proxy/harness.ts';

const IMAGE_MODEL = 'Img/Editor';
const VIDEO_MODEL = 'Vid/Maker';

let h: Harness;
let origin: string;
/** The account every hostile request is made with: it must never be charged. */
let account: { accountId: string; keyId: string; secret: string };
/** Another account's key, for the "still serving" call after each case. */
let probe: string;
beforeAll(async () => {
  h = await startHarness(
    {},
    {
      entries: (endpoints) => [
        imageModel(IMAGE_MODEL, endpoints, { edit: true }),
        videoModel(VIDEO_MODEL, endpoints),
      ],
    },
  );
  origin = h.baseURL.replace(/\/v1$/, '');
  account = await h.newAccount();
  probe = (await h.newAccount()).secret;
});
afterAll(async () => {
  await h?.stop();
});

/** Requests the engines served (any /v1 path). */
const engineCalls = () => h.sims.reduce((n, s) => n + s.stats().requests, 0);
/** The account's balance and newest ledger entry before a case (so one failure does not cascade). */
let before = { engineCalls: 0, balance: 0, newest: '' };
const newestEntry = async () =>
  (await usageRecords(h.redis.client(), account.accountId, { count: 1 }))[0]?.id ?? '';
beforeEach(async () => {
  before = {
    engineCalls: engineCalls(),
    balance: (await h.settled(account.accountId)).balance,
    newest: await newestEntry(),
  };
});
afterEach(async () => {
  expect(engineCalls(), 'an engine was asked').toBe(before.engineCalls);
  expect(await h.settled(account.accountId)).toMatchObject({ balance: before.balance, held: 0 });
  expect(await newestEntry(), 'a ledger entry was written').toBe(before.newest);
  await expectLedgerClean(h.redis.client(), [account.accountId]);
  const ok = await h.client(probe).chat.completions.create({
    model: CHAT_MODEL,
    messages: [{ role: 'user', content: 'still there?' }],
    max_tokens: 3,
  });
  expect(ok.choices[0]!.message.content!.length).toBeGreaterThan(0);
});

const REQ_ID = /^req_[0-9a-f]{24}$/;
const chat = (extra: Record<string, unknown>) => ({
  model: CHAT_MODEL,
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 4,
  ...extra,
});
/** JSON text nested `depth` levels deep (objects and arrays in turn), built as text: stringify would overflow. */
const nest = (depth: number): string => {
  let open = '';
  let close = '';
  for (let i = 0; i < depth; i++) {
    open += i % 2 ? '{"a":' : '[';
    close = (i % 2 ? '}' : ']') + close;
  }
  return `${open}"leaf"${close}`;
};
/** Stands for 10,000 levels of nesting in a body built with JD (JSON.stringify would overflow). */
const DEEP = '__DEEP__';
const JD = (v: unknown) => JSON.stringify(v).replace(`"${DEEP}"`, nest(10_000));
const deepJson = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`;

interface Case {
  name: string;
  method?: string;
  /** A function for paths made once the proxy runs (signed links). */
  path?: string | (() => string);
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The status expected (any 4xx when omitted). */
  status?: number;
  /** Text the error message must contain (names the problem). */
  names?: RegExp;
  /** A 405's Allow header. */
  allow?: string;
}

const BOUNDARY = 'hostile-form-boundary';
const png = gradientPng(7, 8, 8);
/** A multipart/form-data request: text fields, and files as [name, bytes, filename]. */
function form(...parts: ([string, string] | [string, Buffer, string])[]): Pick<Case, 'headers' | 'body'> {
  const chunks: Buffer[] = [];
  for (const [name, value, filename] of parts) {
    const disposition = `Content-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ''}`;
    const type = filename ? '\r\nContent-Type: image/png' : '';
    chunks.push(
      Buffer.from(`--${BOUNDARY}\r\n${disposition}${type}\r\n\r\n`),
      Buffer.from(value),
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return {
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    body: Buffer.concat(chunks),
  };
}
const image = (n = 'image'): [string, Buffer, string] => [n, png, 'in.png'];
/** Schemathesis found these answered 500: busboy's refusal of the body taken for a server fault. */
const noBoundary = (what: string, path: string): Case => ({
  name: `${what}: multipart without a boundary`,
  path,
  headers: { 'content-type': 'multipart/form-data' },
  body: `--x\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nx\r\n--x--\r\n`,
  status: 400,
  names: /multipart/i,
});
/** A link to `key` signed by the proxy's own signer, valid (or expired) as asked. */
const signed = (key: string, expiresAtMs: number) =>
  `/files/${key.split('/').map(encodeURIComponent).join('%2F')}?${h.proxy.ctx.media.signer.query(key, expiresAtMs)}`;

const J = (v: unknown) => JSON.stringify(v);
const cases: Case[] = [
  // Bodies that are not JSON, or not the JSON asked for.
  { name: 'truncated JSON', body: '{"model":', status: 400, names: /JSON/i },
  { name: 'a JSON array body', body: '[]', status: 400 },
  { name: 'a JSON null body', body: 'null', status: 400 },
  { name: 'a JSON string body', body: '"hello"', status: 400 },
  { name: 'a JSON number body', body: '42', status: 400 },
  { name: 'a trailing comma', body: '{"model":"x",}', status: 400, names: /JSON/i },
  { name: 'garbage after the JSON', body: '{"model":"x"} trailing', status: 400, names: /JSON/i },
  { name: 'an empty body', body: '', status: 400 },
  { name: 'single quotes', body: "{'model':'x'}", status: 400, names: /JSON/i },
  { name: 'NaN as a number', body: '{"model":"x","max_tokens":NaN}', status: 400, names: /JSON/i },
  { name: 'invalid UTF-8', body: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), status: 400 },
  {
    name: 'a __proto__ key',
    body: '{"__proto__":{"x":1},"model":"m","messages":[]}',
    status: 400,
    names: /__proto__/,
  },
  {
    name: 'a constructor.prototype key',
    body: '{"constructor":{"prototype":{"x":1}},"model":"m"}',
    status: 400,
    names: /constructor/,
  },
  // Content types.
  { name: 'text/plain', headers: { 'content-type': 'text/plain' }, body: J(chat({})), status: 415 },
  {
    name: 'form-urlencoded',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'model=x',
    status: 415,
  },
  { name: 'application/xml', headers: { 'content-type': 'application/xml' }, body: '<a/>', status: 415 },
  {
    name: 'multipart on chat',
    headers: { 'content-type': 'multipart/form-data; boundary=x' },
    body: '--x--',
    status: 415,
  },
  { name: 'no content type', headers: { 'content-type': '' }, body: J(chat({})), status: 415 },
  // Size and depth.
  { name: 'a 40 MB body', body: J(chat({ pad: 'x'.repeat(40 * 1024 * 1024) })), status: 413 },
  {
    name: 'JSON nested 10,000 deep in content',
    body: JD(chat({ messages: [{ role: 'user', content: [{ type: 'text', text: 'x', deep: DEEP }] }] })),
    status: 400,
    names: /nest/i,
  },
  {
    name: 'JSON nested 10,000 deep in an unknown field',
    body: JD(chat({ extra: DEEP })),
    status: 400,
    names: /nest/i,
  },
  {
    name: 'JSON nested 10,000 deep in tool parameters',
    body: JD(chat({ tools: [{ type: 'function', function: { name: 'f', parameters: DEEP } }] })),
    status: 400,
    names: /nest/i,
  },
  {
    name: 'raw arrays nested 100,000 deep',
    body: `{"model":"m","x":${deepJson(100_000)}}`,
    status: 400,
    names: /nest/i,
  },
  {
    name: '100,000 messages',
    body: J(chat({ messages: Array.from({ length: 100_000 }, () => ({ role: 'user', content: 'x' })) })),
    status: 400,
    names: /messages/,
  },
  // Huge, negative and odd numbers.
  {
    name: 'max_tokens 2^53 − 1',
    body: J(chat({ max_tokens: 9007199254740991 })),
    status: 400,
    names: /max_tokens/,
  },
  { name: 'max_tokens 1e308', body: J(chat({ max_tokens: 1e308 })), status: 400, names: /max_tokens/ },
  // max_tokens above the model's limit is served at the limit: test/proxy/output-limit.test.ts.
  { name: 'max_tokens −1', body: J(chat({ max_tokens: -1 })), status: 400, names: /max_tokens/ },
  { name: 'max_tokens 0', body: J(chat({ max_tokens: 0 })), status: 400, names: /max_tokens/ },
  { name: 'max_tokens 1.5', body: J(chat({ max_tokens: 1.5 })), status: 400, names: /max_tokens/ },
  { name: 'max_tokens as a string', body: J(chat({ max_tokens: '10' })), status: 400, names: /max_tokens/ },
  {
    name: 'max_completion_tokens 1e12',
    body: J(chat({ max_tokens: undefined, max_completion_tokens: 1e12 })),
    status: 400,
    names: /max_completion_tokens/,
  },
  {
    name: 'n 16 with max_tokens 1e12',
    body: J(chat({ n: 16, max_tokens: 1e12 })),
    status: 400,
    names: /max_tokens/,
  },
  { name: 'n 0', body: J(chat({ n: 0 })), status: 400, names: /\bn\b/ },
  { name: 'n 1e9', body: J(chat({ n: 1e9 })), status: 400, names: /\bn\b/ },
  { name: 'temperature 1e308', body: J(chat({ temperature: 1e308 })), status: 400, names: /temperature/ },
  { name: 'temperature −5', body: J(chat({ temperature: -5 })), status: 400, names: /temperature/ },
  { name: 'top_p 2', body: J(chat({ top_p: 2 })), status: 400, names: /top_p/ },
  { name: 'seed 1e30', body: J(chat({ seed: 1e30 })), status: 400, names: /seed/ },
  { name: 'logit_bias 1e9', body: J(chat({ logit_bias: { '1': 1e9 } })), status: 400, names: /logit_bias/ },
  { name: 'top_logprobs 1000', body: J(chat({ top_logprobs: 1000 })), status: 400, names: /top_logprobs/ },
  // Wrong shapes.
  { name: 'no model', body: J({ messages: [{ role: 'user', content: 'x' }] }), status: 400, names: /model/ },
  { name: 'model as a number', body: J(chat({ model: 5 })), status: 400, names: /model/ },
  { name: 'an empty model', body: J(chat({ model: '' })), status: 400, names: /model/ },
  {
    name: 'a 300-character model id',
    body: J(chat({ model: 'm'.repeat(300) })),
    status: 400,
    names: /model/,
  },
  { name: 'a NUL in the model id', body: J(chat({ model: 'Org/Chat\u0000Model' })), status: 404 },
  { name: 'a newline in the model id', body: J(chat({ model: 'Org/Chat\nModel' })), status: 404 },
  { name: 'an RTL override in the model id', body: J(chat({ model: 'Org/\u202eledoM' })), status: 404 },
  { name: 'a CJK model id', body: J(chat({ model: '模型/聊天' })), status: 404 },
  { name: 'an emoji model id', body: J(chat({ model: '🤖/🤖' })), status: 404 },
  { name: 'messages as a string', body: J(chat({ messages: 'hi' })), status: 400, names: /messages/ },
  { name: 'no messages', body: J(chat({ messages: [] })), status: 400, names: /messages/ },
  {
    name: 'an unknown role',
    body: J(chat({ messages: [{ role: 'wizard', content: 'x' }] })),
    status: 400,
    names: /role/,
  },
  {
    name: 'content as a number',
    body: J(chat({ messages: [{ role: 'user', content: 5 }] })),
    status: 400,
    names: /content/,
  },
  { name: 'stream as a string', body: J(chat({ stream: 'yes' })), status: 400, names: /stream/ },
  {
    name: 'stop with 100 sequences',
    body: J(chat({ stop: Array.from({ length: 100 }, (_, i) => String(i)) })),
    status: 400,
    names: /stop/,
  },
  { name: 'tools as an object', body: J(chat({ tools: { a: 1 } })), status: 400, names: /tools/ },
  // Embeddings.
  {
    name: 'embeddings: negative token ids',
    path: '/v1/embeddings',
    body: J({ model: EMBED_MODEL, input: [-1, -2] }),
    status: 400,
    names: /input/,
  },
  {
    name: 'embeddings: input as an object',
    path: '/v1/embeddings',
    body: J({ model: EMBED_MODEL, input: { a: 1 } }),
    status: 400,
    names: /input/,
  },
  {
    name: 'embeddings: 200,000 inputs',
    path: '/v1/embeddings',
    body: J({ model: EMBED_MODEL, input: Array.from({ length: 200_000 }, () => 'x') }),
    status: 400,
    names: /input/,
  },
  {
    name: 'embeddings: encoding_format hex',
    path: '/v1/embeddings',
    body: J({ model: EMBED_MODEL, input: 'x', encoding_format: 'hex' }),
    status: 400,
    names: /encoding_format/,
  },
  // Image generations.
  ...(
    [
      ['n 0', { n: 0 }, /\bn\b/],
      ['n 11', { n: 11 }, /\bn\b/],
      ['n 2.5', { n: 2.5 }, /\bn\b/],
      ['n as a string', { n: '2' }, /\bn\b/],
      ['response_format gif', { response_format: 'gif' }, /response_format/],
      ['no prompt', { prompt: undefined }, /prompt/],
      ['a 40,000-character prompt', { prompt: 'p'.repeat(40_000) }, /prompt/],
      ['a chat model', { model: CHAT_MODEL }, /model/],
    ] as const
  ).map(
    ([name, extra, names]): Case => ({
      name: `images: ${name}`,
      path: '/v1/images/generations',
      body: J({ model: IMAGE_MODEL, prompt: 'a cat', ...extra }),
      status: 400,
      names,
    }),
  ),
  {
    name: 'images: text/plain',
    path: '/v1/images/generations',
    headers: { 'content-type': 'text/plain' },
    body: 'a cat',
    status: 415,
  },
  // Image edits (multipart).
  noBoundary('edits', '/v1/images/edits'),
  ...['0', '11', 'many', '2.5'].map(
    (n): Case => ({
      name: `edits: n "${n}"`,
      path: '/v1/images/edits',
      ...form(['model', IMAGE_MODEL], ['prompt', 'p'], ['n', n], image()),
      status: 400,
      names: /\bn\b/,
    }),
  ),
  {
    name: 'edits: JSON instead of a form',
    path: '/v1/images/edits',
    body: J({ model: IMAGE_MODEL, prompt: 'p', image: 'aGVsbG8=' }),
    status: 415,
    names: /multipart/,
  },
  {
    name: 'edits: text/plain',
    path: '/v1/images/edits',
    headers: { 'content-type': 'text/plain' },
    body: 'p',
    status: 415,
  },
  {
    name: 'edits: prompt sent twice',
    path: '/v1/images/edits',
    ...form(['model', IMAGE_MODEL], ['prompt', 'one'], ['prompt', 'two'], image()),
    status: 400,
    names: /'prompt' was sent twice/,
  },
  {
    name: 'edits: model sent twice (the first resolved, the second another)',
    path: '/v1/images/edits',
    ...form(['model', IMAGE_MODEL], ['model', 'Img/Other'], ['prompt', 'p'], image()),
    status: 400,
    names: /'model' was sent twice/,
  },
  {
    name: 'edits: two masks',
    path: '/v1/images/edits',
    ...form(['model', IMAGE_MODEL], ['prompt', 'p'], image(), image('mask'), image('mask')),
    status: 400,
    names: /mask/,
  },
  {
    name: 'edits: a file in an unexpected field',
    path: '/v1/images/edits',
    ...form(['model', IMAGE_MODEL], ['prompt', 'p'], image('picture')),
    status: 400,
    names: /picture/,
  },
  {
    name: 'edits: no image',
    path: '/v1/images/edits',
    ...form(['model', IMAGE_MODEL], ['prompt', 'p']),
    status: 400,
    names: /image/,
  },
  // Videos: JSON and multipart alike.
  ...(
    [
      ['seconds "0"', { seconds: '0' }, /seconds/],
      ['seconds "-1"', { seconds: '-1' }, /seconds/],
      ['seconds "abc"', { seconds: 'abc' }, /seconds/],
      ['seconds "1000"', { seconds: '1000' }, /seconds/],
      ['size "big"', { size: 'big' }, /size/],
      ['size "1x1"', { size: '1x1' }, /size/],
    ] as const
  ).flatMap(([name, extra, names]): Case[] => [
    {
      name: `videos (JSON): ${name}`,
      path: '/v1/videos',
      body: J({ model: VIDEO_MODEL, prompt: 'a wave', ...extra }),
      status: 400,
      names,
    },
    {
      name: `videos (form): ${name}`,
      path: '/v1/videos',
      ...form(['model', VIDEO_MODEL], ['prompt', 'a wave'], ...Object.entries(extra)),
      status: 400,
      names,
    },
  ]),
  noBoundary('videos', '/v1/videos'),
  {
    name: 'videos: seconds sent twice',
    path: '/v1/videos',
    ...form(['model', VIDEO_MODEL], ['prompt', 'a wave'], ['seconds', '4'], ['seconds', '120']),
    status: 400,
    names: /'seconds' was sent twice/,
  },
  {
    name: 'videos: text/plain',
    path: '/v1/videos',
    headers: { 'content-type': 'text/plain' },
    body: 'a wave',
    status: 415,
  },
  // Signed file links (no key needed; the signature is the key).
  { name: 'files: no signature or expiry', method: 'GET', path: '/files/images/x.png', status: 403 },
  {
    name: 'files: a wrong signature',
    method: 'GET',
    path: '/files/images/x.png?expires=9999999999&sig=AAAA',
    status: 403,
    names: /not valid/,
  },
  { name: 'files: no expiry', method: 'GET', path: '/files/images/x.png?sig=AAAA', status: 403 },
  {
    name: 'files: a path traversal (..%2F)',
    method: 'GET',
    path: '/files/..%2F..%2F..%2Fetc%2Fpasswd?expires=9999999999&sig=AAAA',
    status: 403,
  },
  {
    name: 'files: a signed path traversal (the store refuses it too)',
    method: 'GET',
    path: () => signed('../../../etc/passwd', Date.now() + 60_000),
    status: 403,
    names: /not valid/,
  },
  {
    name: 'files: an expired link',
    method: 'GET',
    path: () => signed('images/x.png', Date.now() - 1_000),
    status: 403,
    names: /expired/,
  },
  {
    name: 'files: a signed link to nothing',
    method: 'GET',
    path: () => signed('images/nothing.png', Date.now() + 60_000),
    status: 404,
  },
  // Paths and methods.
  { name: 'an unknown path', method: 'GET', path: '/v1/nothing-here', body: undefined, status: 404 },
  {
    name: 'a bad percent-encoding in a model path',
    method: 'GET',
    path: '/v1/models/%ZZ',
    body: undefined,
    status: 400,
    names: /%ZZ/,
  },
  {
    name: 'DELETE on chat completions',
    method: 'DELETE',
    path: '/v1/chat/completions',
    body: undefined,
    status: 405,
    allow: 'POST',
  },
  { name: 'PUT on the model list', method: 'PUT', path: '/v1/models', body: '{}', status: 405, allow: 'GET' },
  {
    name: 'GET on embeddings',
    method: 'GET',
    path: '/v1/embeddings',
    body: undefined,
    status: 405,
    allow: 'POST',
  },
  {
    name: 'GET on image generations',
    method: 'GET',
    path: '/v1/images/generations',
    body: undefined,
    status: 405,
    allow: 'POST',
  },
  { name: 'PUT on videos', method: 'PUT', path: '/v1/videos', body: '{}', status: 405, allow: 'POST, GET' },
  { name: 'a 10 KB path', method: 'GET', path: `/v1/models/${'a'.repeat(10_000)}`, body: undefined },
  // Authorization headers.
  { name: 'Bearer with no key', headers: { authorization: 'Bearer' }, body: J(chat({})), status: 401 },
  { name: 'Bearer and an empty key', headers: { authorization: 'Bearer ' }, body: J(chat({})), status: 401 },
  { name: 'Basic auth', headers: { authorization: 'Basic dXNlcjpwYXNz' }, body: J(chat({})), status: 401 },
  {
    name: 'a key with a trailing space inside',
    headers: { authorization: 'Bearer sk-service-abc def' },
    body: J(chat({})),
    status: 401,
  },
  {
    name: 'a 5 KB key',
    headers: { authorization: `Bearer ${'k'.repeat(5000)}` },
    body: J(chat({})),
    status: 401,
  },
  {
    name: 'x-api-key on the chat surface alone',
    headers: { authorization: '', 'x-api-key': 'sk-service-x' },
    body: J(chat({})),
    status: 401,
  },
  // The Messages surface answers in its own shape.
  { name: 'messages: truncated JSON', path: '/v1/messages', body: '{"model":', status: 400 },
  {
    name: 'messages: deep nesting',
    path: '/v1/messages',
    body: JD({
      model: CHAT_MODEL,
      max_tokens: 4,
      messages: [{ role: 'user', content: 'x' }],
      metadata: { user_id: DEEP },
    }),
    status: 400,
    names: /nest/i,
  },
  {
    name: 'messages: max_tokens 2^53 − 1',
    path: '/v1/messages',
    body: J({ model: CHAT_MODEL, max_tokens: 9007199254740991, messages: [{ role: 'user', content: 'x' }] }),
    status: 400,
    names: /max_tokens/,
  },
  {
    name: 'messages: DELETE',
    method: 'DELETE',
    path: '/v1/messages',
    body: undefined,
    status: 405,
    allow: 'POST',
  },
  { name: 'messages: an unknown path', method: 'POST', path: '/v1/messages/nope', body: '{}', status: 404 },
];

const pathOf = (c: Case) => (typeof c.path === 'function' ? c.path() : (c.path ?? '/v1/chat/completions'));

async function send(c: Case): Promise<Response> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${account.secret}`,
    'content-type': 'application/json',
    ...c.headers,
  };
  for (const [k, v] of Object.entries(headers)) if (v === '') delete headers[k];
  const method = c.method ?? 'POST';
  return fetch(`${origin}${pathOf(c)}`, {
    method,
    headers,
    ...(c.body !== undefined && method !== 'GET'
      ? { body: typeof c.body === 'string' ? c.body : new Uint8Array(c.body) }
      : {}),
  });
}

function expectShape(path: string, res: Response, json: Record<string, unknown>) {
  const id = res.headers.get('x-request-id');
  expect(id).toMatch(REQ_ID);
  if (path.startsWith('/v1/messages')) {
    expect(json.type).toBe('error');
    expect(json.request_id).toBe(id);
    return (json.error as { message: string }).message;
  }
  const err = json.error as { message: string; type: string; code: string };
  expect(typeof err.message).toBe('string');
  expect(typeof err.type).toBe('string');
  expect(typeof err.code).toBe('string');
  return err.message;
}

describe('hostile input: a 4xx in the error shape, a request id, nothing charged, still serving', () => {
  it.each(cases.map((c) => [c.name, c] as const))('ERR-1 ERR-2 %s', async (_name, c) => {
    const res = await send(c);
    const text = await res.text();
    if (c.status !== undefined)
      expect([res.status, text.slice(0, 300)]).toEqual([c.status, expect.anything()]);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    const message = expectShape(pathOf(c), res, JSON.parse(text));
    if (c.names) expect(message).toMatch(c.names);
    if (res.status === 405) expect(res.headers.get('allow')).toBe(c.allow);
  });
});

/** One request written on a raw socket (what fetch refuses to send); the whole answer back. */
function raw(request: string | Buffer): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(origin);
    const socket = connect(Number(url.port), url.hostname, () => socket.write(request));
    let data = '';
    socket.on('data', (b) => {
      data += b.toString('latin1');
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = data.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]), headers: head.toLowerCase(), body });
    });
  });
}

/** A raw answer in the chat-completions error shape, with a request id; its error object. */
function expectRawShape(
  r: { headers: string; body: string },
  want: { code?: string; type?: string },
): { message: string; type: string; code: string; param: string | null } {
  expect(r.headers).toMatch(/x-request-id: req_[0-9a-f]{24}\r?$/m);
  expect(r.headers).toMatch(/content-type: application\/json/);
  const json = JSON.parse(r.body) as {
    error: { message: string; type: string; code: string; param: string | null };
  };
  expect(json.error).toEqual({
    message: expect.any(String),
    type: want.type ?? expect.any(String),
    code: want.code ?? expect.any(String),
    param: json.error.param === null ? null : expect.any(String),
  });
  return json.error;
}

describe('hostile headers on a raw socket', () => {
  const body = J(chat({}));
  const post = (headerLines: string) =>
    `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n${headerLines}\r\n${body}`;

  it.each([
    ['a key pasted with a bare newline', 'Authorization: Bearer sk-service-abc\ndef\r\n', 400],
    ['a header with a NUL byte', 'Authorization: Bearer sk\u0000x\r\n', 400],
    ['a 100 KB header', `X-Big: ${'a'.repeat(100 * 1024)}\r\n`, 431],
    ['a header without a colon', 'NoColonHere\r\n', 400],
  ] as const)('ERR-1 %s → %i in the error shape with a request id', async (_name, lines, status) => {
    const r = await raw(post(lines));
    expect(r.status).toBe(status);
    expectRawShape(r, {});
  });

  it('ERR-1 two Authorization headers: refused (401) in the error shape, never guessed', async () => {
    const r = await raw(
      post(`Authorization: Bearer ${account.secret}\r\nAuthorization: Bearer sk-service-other\r\n`),
    );
    expect(r.status).toBe(401);
    expectRawShape(r, { code: 'invalid_api_key', type: 'authentication_error' });
  });

  it('ERR-1 a request line that is not HTTP → 400 in the error shape', async () => {
    const r = await raw('HELLO WORLD\r\n\r\n');
    expect(r.status).toBe(400);
    const err = expectRawShape(r, { code: 'invalid_request', type: 'invalid_request_error' });
    expect(err.message).toMatch(/not HTTP/);
  });

  it('the Messages surface answers a broken header in its own shape', async () => {
    const mbody = J({ model: CHAT_MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'x' }] });
    const r = await raw(
      `POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${mbody.length}\r\nX-Api-Key: sk\nx\r\n\r\n${mbody}`,
    );
    expect(r.status).toBe(400);
    const json = JSON.parse(r.body) as { type: string; request_id: string };
    expect(json.type).toBe('error');
    expect(r.headers).toContain(`x-request-id: ${json.request_id}`);
  });
});
