// Issue 24 items 4 and 5: what a key can make an engine do. Media URLs the engine would download
// are refused unless https (or data:) to a public host; image parts need a vision model on every
// surface; chat_template_kwargs carries only known template switches. A listener on loopback
// stands for an internal service: no refused request opens a connection to it, each is a 400
// naming the field, and nothing is charged.
import Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InternalListener, internalListener } from '../helpers/internal-listener.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, chatModel, type Harness, startHarness } from '../proxy/harness.ts';

const VISION = 'Org/Vision-Chat';
let h: Harness;
let listener: InternalListener;
let port = 0;

beforeAll(async () => {
  listener = await internalListener();
  port = listener.port;
  h = await startHarness(
    {},
    {
      entries: (endpoints) => [chatModel(VISION, endpoints, { vision: true })],
    },
  );
});
afterAll(async () => {
  await h?.stop();
  await listener?.close();
});

/** The 400's error (status, code, param, message) from an SDK call that must fail. */
async function refusal(call: Promise<unknown>) {
  const err = (await call.then(
    () => null,
    (e: unknown) => e,
  )) as {
    status?: number;
    error?: { error?: { param?: string; message?: string }; param?: string; message?: string };
  };
  expect(err, 'the request was accepted').not.toBeNull();
  const body = err.error?.error ?? err.error;
  return { status: err.status, param: body?.param, message: body?.message ?? '' };
}

const internalUrls = () => [
  `http://127.0.0.1:${port}/cat.png`,
  `https://127.0.0.1:${port}/cat.png`,
  `https://2130706433:${port}/cat.png`, // 127.0.0.1 as one number
  `https://[::ffff:127.0.0.1]:${port}/cat.png`,
  `https://localhost:${port}/cat.png`,
  'https://169.254.169.254/latest/meta-data/',
  'https://metadata.google.internal/computeMetadata/v1/',
  'https://10.0.0.7/x.png',
  'https://192.168.1.1/x.png',
  'https://[fd00:ec2::254]/latest',
  'https://redis:6379/x', // a cluster-internal name (no dot)
  'https://kube-dns.kube-system.svc/x',
  'file:///etc/passwd',
  'ftp://example.com/x.png',
  'http://images.example.com/cat.png', // public, but not https
];

describe('media URLs never point an engine inside the network', () => {
  it('chat completions: every internal or non-https image_url, audio_url and video_url is a 400 naming it; no connection; nothing charged', async () => {
    const client = h.client();
    await h.quiesce(); // earlier tests' charges landed
    const before = await h.metering.balance(h.accountId);
    for (const url of internalUrls()) {
      for (const kind of ['image_url', 'audio_url', 'video_url'] as const) {
        const part = { type: kind, [kind]: { url } } as unknown as OpenAI.ChatCompletionContentPart;
        const r = await refusal(
          client.chat.completions.create({
            model: VISION,
            max_tokens: 3,
            messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, part] }],
          }),
        );
        expect([url, kind, r.status, r.param]).toEqual([
          url,
          kind,
          400,
          `messages[0].content[1].${kind}.url`,
        ]);
      }
    }
    expect(listener.connections()).toBe(0);
    await h.quiesce();
    expect(await h.metering.balance(h.accountId)).toEqual(before);
    await expectLedgerClean(h.redis.client(), [h.accountId]);
  });

  it('Messages: an image block whose url source is internal is a 400 naming it; no connection', async () => {
    const anthropic = new Anthropic({
      apiKey: h.secret,
      baseURL: h.baseURL.replace(/\/v1$/, ''),
      maxRetries: 0,
    });
    for (const url of internalUrls()) {
      const r = await refusal(
        anthropic.messages.create({
          model: VISION,
          max_tokens: 3,
          messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url } }] }],
        }),
      );
      // The Messages error shape has no param: the message names the field.
      expect([url, r.status, r.message.includes('messages[0].content[0].source.url')]).toEqual([
        url,
        400,
        true,
      ]);
    }
    expect(listener.connections()).toBe(0);
  });

  it('public https and data: URLs still pass (the filter is not a wall)', async () => {
    const client = h.client();
    for (const url of ['https://images.example.com/cat.png', 'data:image/png;base64,iVBORw0KGgo=']) {
      const done = await client.chat.completions.create({
        model: VISION,
        max_tokens: 3,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'look' },
              { type: 'image_url', image_url: { url } },
            ],
          },
        ],
      });
      expect(done.choices[0]!.message.content).toBeTypeOf('string');
    }
    await expectLedgerClean(h.redis.client(), [h.accountId]);
  });

  it('chat completions refuses image parts for a model without vision, as Messages does', async () => {
    await h.quiesce(); // earlier tests' charges landed
    const before = await h.metering.balance(h.accountId);
    const r = await refusal(
      h.client().chat.completions.create({
        model: CHAT_MODEL,
        max_tokens: 3,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'look' },
              { type: 'image_url', image_url: { url: 'https://images.example.com/cat.png' } },
            ],
          },
        ],
      }),
    );
    expect(r).toMatchObject({ status: 400, param: 'messages[0].content[1]' });
    expect(r.message).toMatch(/cannot read images/);
    const anthropic = new Anthropic({
      apiKey: h.secret,
      baseURL: h.baseURL.replace(/\/v1$/, ''),
      maxRetries: 0,
    });
    const m = await refusal(
      anthropic.messages.create({
        model: CHAT_MODEL,
        max_tokens: 3,
        messages: [
          {
            role: 'user',
            content: [{ type: 'image', source: { type: 'url', url: 'https://images.example.com/a.png' } }],
          },
        ],
      }),
    );
    expect(m.status).toBe(400);
    expect(m.message).toMatch(/cannot read images/);
    await h.quiesce();
    expect(await h.metering.balance(h.accountId)).toEqual(before);
    await expectLedgerClean(h.redis.client(), [h.accountId]);
  });
});

describe('chat_template_kwargs carries only template switches', () => {
  const ask = (kwargs: Record<string, unknown>) =>
    h.client().chat.completions.create({
      model: CHAT_MODEL,
      max_tokens: 3,
      messages: [{ role: 'user', content: 'hi' }],
      // @ts-expect-error vLLM's field, not in the OpenAI SDK's types
      chat_template_kwargs: kwargs,
    });

  it('chat_template, tokenize or any other key is a 400 naming it, and reaches no engine', async () => {
    const sent = h.sims.reduce((n, s) => n + s.received().length, 0);
    for (const [key, value] of [
      ['chat_template', '{% for i in range(10**9) %}x{% endfor %}'],
      ['tokenize', true],
      ['return_dict', true],
      ['tools', []],
      ['documents', []],
    ] as const) {
      const r = await refusal(ask({ enable_thinking: false, [key]: value }));
      expect([key, r.status, r.param]).toEqual([key, 400, `chat_template_kwargs.${key}`]);
    }
    const wrongType = await refusal(ask({ enable_thinking: 'yes' }));
    expect(wrongType).toMatchObject({ status: 400, param: 'chat_template_kwargs.enable_thinking' });
    expect(h.sims.reduce((n, s) => n + s.received().length, 0)).toBe(sent);
  });

  it('the known switches reach the engine as sent', async () => {
    const before = h.sims.map((s) => s.received().length);
    await ask({ enable_thinking: true, thinking: false, reasoning_effort: 'low' });
    const got = h.sims
      .flatMap((s, i) => s.received().slice(before[i]))
      .filter((r) => r.path === '/v1/chat/completions')
      .map((r) => (r.json as { chat_template_kwargs?: unknown }).chat_template_kwargs);
    expect(got).toEqual([{ enable_thinking: true, thinking: false, reasoning_effort: 'low' }]);
    await expectLedgerClean(h.redis.client(), [h.accountId]);
  });
});
