// Every request policy × every surface (issue 30 item 4): the same input gets the same refusal on
// chat completions, Messages (and its count_tokens), the Responses API and the history a Responses
// previous_response_id replays — a 400 of code invalid_request naming the client's own field, no
// engine asked, nothing charged. The policies live at one door (proxy/calls/text-door.ts); before
// it, the Responses rows of the media-URL policy were accepted and the image URL forwarded.
// Embeddings have their prompt bound; images take no text prompt policy.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResponseStore } from '../../core/jobs/response-store.ts';
import { type InternalListener, internalListener } from '../helpers/internal-listener.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, chatModel, type Harness, startHarness } from '../proxy/harness.ts';

const VISION = 'Org/Vision-No-Tools';
const SMALL = 'Org/Small-Context';
const SMALL_EMBED = 'Embed/Small-Context';

let h: Harness;
let listener: InternalListener;
let port = 0;
let store: ResponseStore;
let balance = 0;

beforeAll(async () => {
  listener = await internalListener();
  port = listener.port;
  h = await startHarness(
    {},
    {
      entries: (endpoints) => [
        chatModel(VISION, endpoints, { vision: true }),
        { ...chatModel(SMALL, endpoints, { tools: true }), contextLength: 64 },
        {
          id: SMALL_EMBED,
          kind: 'embedding',
          pricing: { USD: { input: '0.1' } },
          contextLength: 64,
          endpoints,
          created: 1_700_000_000,
        },
      ],
    },
  );
  store = new ResponseStore(h.redis.client(), { maxBytes: 1 << 20, perAccount: 1000 });
  balance = (await h.metering.balance(h.accountId)).balance;
});
afterAll(async () => {
  await h?.stop();
  await listener?.close();
});

type Surface = 'chat' | 'messages' | 'count_tokens' | 'responses' | 'responses history' | 'embeddings';

/** One policy's input, in each surface's own words; `field` is where each names it. */
interface Row {
  policy: string;
  model: string;
  /** The user turn's content in the surface's shape (a bad part), or other top-level fields. */
  bodies: Partial<Record<Surface, () => Promise<Record<string, unknown>>>>;
  field: Partial<Record<Surface, string>>;
  message: RegExp;
  /** The engine's tokenizer may be asked to count the prompt (never to generate). */
  counts?: true;
}

const text = 'look';
const longPrompt = 'x'.repeat(64 * 256 + 512); // more tokens than 64 whatever the tokenizer

/** A stored response whose conversation holds `items` (kept before the policy held, or by another model). */
async function storedWith(items: unknown[]): Promise<string> {
  const id = `resp_${randomBytes(12).toString('hex')}`;
  await store.save(h.accountId, id, {
    response: JSON.stringify({ id, object: 'response', status: 'completed', output: [] }),
    items: JSON.stringify([...items, { role: 'assistant', content: 'ok' }]),
  });
  return id;
}

const codexTools = {
  type: 'additional_tools',
  role: 'developer',
  tools: [
    { type: 'namespace', name: 'functions', description: '', tools: [{ type: 'custom', name: 'exec' }] },
  ],
};

const chatImage = (url: string) => ({
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text },
        { type: 'image_url', image_url: { url } },
      ],
    },
  ],
});
const messagesImage = (url: string) => ({
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text },
        { type: 'image', source: { type: 'url', url } },
      ],
    },
  ],
});
const responsesImage = (url: string) => [
  {
    role: 'user',
    content: [
      { type: 'input_text', text },
      { type: 'input_image', image_url: url },
    ],
  },
];

/** An image row: the same URL on every surface that carries images. */
function imageRow(policy: string, model: string, url: () => string, message: RegExp, urlField: boolean): Row {
  return {
    policy,
    model,
    message,
    bodies: {
      chat: async () => chatImage(url()),
      messages: async () => messagesImage(url()),
      count_tokens: async () => messagesImage(url()),
      responses: async () => ({ input: responsesImage(url()) }),
      'responses history': async () => ({
        previous_response_id: await storedWith(responsesImage(url())),
        input: 'and now?',
      }),
    },
    field: urlField
      ? {
          chat: 'messages[0].content[1].image_url.url',
          messages: 'messages[0].content[1].source.url',
          count_tokens: 'messages[0].content[1].source.url',
          responses: 'input[0].content[1].image_url',
          'responses history': 'previous_response_id (item 0).content[1].image_url',
        }
      : {
          chat: 'messages[0].content[1]',
          messages: 'messages[0].content[1]',
          count_tokens: 'messages[0].content[1]',
          responses: 'input[0].content[1]',
          'responses history': 'previous_response_id (item 0).content[1]',
        },
  };
}

const tool = {
  chat: { type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } },
  messages: { name: 'f', input_schema: { type: 'object', properties: {} } },
  responses: { type: 'function', name: 'f', parameters: { type: 'object', properties: {} } },
};

const rows: Row[] = [
  imageRow(
    'a loopback image URL',
    VISION,
    () => `http://127.0.0.1:${port}/cat.png`,
    /must be an https:\/\/ or data: URL/,
    true,
  ),
  imageRow(
    'the cloud metadata address',
    VISION,
    () => 'https://169.254.169.254/latest/meta-data/',
    /names an internal address/,
    true,
  ),
  imageRow('a file: URL', VISION, () => 'file:///etc/passwd', /must be an https:\/\/ or data: URL/, true),
  imageRow(
    'an image for a model without vision',
    CHAT_MODEL,
    () => 'https://images.example.com/cat.png',
    /cannot read images/,
    false,
  ),
  {
    policy: 'a chat_template_kwargs key other than the switches',
    model: CHAT_MODEL,
    message: /chat_template/,
    bodies: {
      chat: async () => ({
        messages: [{ role: 'user', content: text }],
        chat_template_kwargs: { chat_template: 'x' },
      }),
      messages: async () => ({
        messages: [{ role: 'user', content: text }],
        chat_template_kwargs: { chat_template: 'x' },
      }),
      count_tokens: async () => ({
        messages: [{ role: 'user', content: text }],
        chat_template_kwargs: { chat_template: 'x' },
      }),
      responses: async () => ({ input: text, chat_template_kwargs: { chat_template: 'x' } }),
    },
    // Chat has the field and refuses the key; the others have no such field at all.
    field: {
      chat: 'chat_template_kwargs.chat_template',
      messages: 'chat_template_kwargs',
      count_tokens: 'chat_template_kwargs',
      responses: 'chat_template_kwargs',
    },
  },
  {
    policy: 'tools for a model without tools',
    model: VISION,
    message: /cannot call tools/,
    bodies: {
      chat: async () => ({ messages: [{ role: 'user', content: text }], tools: [tool.chat] }),
      messages: async () => ({ messages: [{ role: 'user', content: text }], tools: [tool.messages] }),
      count_tokens: async () => ({ messages: [{ role: 'user', content: text }], tools: [tool.messages] }),
      responses: async () => ({ input: text, tools: [tool.responses] }),
    },
    field: { chat: 'tools', messages: 'tools', count_tokens: 'tools', responses: 'tools' },
  },
  {
    // Codex CLI's default model gets its tools so: a namespace holding a custom tool, in an
    // additional_tools item (now or in the history a previous_response_id continues).
    policy: 'custom tools (additional_tools, namespace) for a model without tools',
    model: VISION,
    message: /cannot call tools/,
    bodies: {
      responses: async () => ({ input: [codexTools, { role: 'user', content: text }] }),
      'responses history': async () => ({
        previous_response_id: await storedWith([codexTools, { role: 'user', content: text }]),
        input: 'and now?',
      }),
    },
    field: { responses: 'tools', 'responses history': 'tools' },
  },
  {
    policy: 'a prompt longer than the context',
    model: SMALL,
    counts: true,
    message: /maximum context length is 64 tokens/,
    bodies: {
      chat: async () => ({ messages: [{ role: 'user', content: longPrompt }] }),
      messages: async () => ({ messages: [{ role: 'user', content: longPrompt }] }),
      responses: async () => ({ input: longPrompt }),
      'responses history': async () => ({
        previous_response_id: await storedWith([{ role: 'user', content: longPrompt }]),
        input: 'and now?',
      }),
      embeddings: async () => ({ model: SMALL_EMBED, input: longPrompt }),
    },
    field: {
      chat: 'messages',
      messages: 'messages',
      responses: 'messages',
      'responses history': 'messages',
      embeddings: 'input',
    },
  },
];

const paths: Record<Surface, string> = {
  chat: '/v1/chat/completions',
  messages: '/v1/messages',
  count_tokens: '/v1/messages/count_tokens',
  responses: '/v1/responses',
  'responses history': '/v1/responses',
  embeddings: '/v1/embeddings',
};

/** The surface's whole request around a row's part. */
function requestBody(
  surface: Surface,
  model: string,
  part: Record<string, unknown>,
): Record<string, unknown> {
  switch (surface) {
    case 'chat':
      return { model, max_tokens: 3, ...part };
    case 'messages':
      return { model, max_tokens: 3, ...part };
    case 'count_tokens':
    case 'embeddings':
      return { model, ...part };
    case 'responses':
    case 'responses history':
      return { model, max_output_tokens: 3, ...part };
  }
}

const cases = rows.flatMap((row) =>
  (Object.keys(row.bodies) as Surface[]).map(
    (surface) => [`${row.policy} on ${surface}`, row, surface] as const,
  ),
);

describe('request policies at one door: the same refusal on every surface', () => {
  it.each(cases)('%s: 400 invalid_request naming the field; no engine asked', async (_name, row, surface) => {
    const origin = h.baseURL.replace(/\/v1$/, '');
    const asked = () =>
      h.sims.reduce(
        (n, s) => n + s.received().filter((r) => !(row.counts && r.path === '/tokenize')).length,
        0,
      );
    const sent = asked();
    const res = await fetch(`${origin}${paths[surface]}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(requestBody(surface, row.model, await row.bodies[surface]!())),
    });
    const body = (await res.json()) as {
      error?: { type?: string; code?: string; param?: string; message?: string };
    };
    const field = row.field[surface]!;
    expect(res.status, JSON.stringify(body)).toBe(400);
    expect(body.error?.type).toBe('invalid_request_error');
    if (surface === 'messages' || surface === 'count_tokens') {
      // The Messages error shape has no param: the message names the field.
      expect(body.error?.message, JSON.stringify(body)).toContain(field);
    } else {
      expect(body.error?.param, JSON.stringify(body)).toBe(field);
      expect(body.error?.code).toBe('invalid_request');
    }
    expect(body.error?.message, JSON.stringify(body)).toMatch(
      row.field[surface] === 'chat_template_kwargs' ? /chat_template_kwargs/ : row.message,
    );
    expect(asked()).toBe(sent);
  });

  it('no refused request reached the internal listener, and nothing was charged', async () => {
    expect(listener.connections()).toBe(0);
    expect(await h.settled(h.accountId)).toMatchObject({ balance, held: 0 });
    await expectLedgerClean(h.redis.client(), [h.accountId]);
  });
});
