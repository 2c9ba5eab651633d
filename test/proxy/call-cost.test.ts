// "Every response says what it cost" (issue 19 item 1, DESIGN "Money"): usage.cost (a decimal
// string in the account currency) and usage.currency in every answer, read through the official
// SDKs, equal to the balance change of that call, exactly; x-modelplane-cost on non-streamed answers.
// Each call runs on a fresh account, so its balance change is that call's charge alone. Each test
// ends with the ledger check.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDecimalToNano } from '../../core/money.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, EMBED_MODEL, type Harness, imageModel, startHarness, videoModel } from './harness.ts';

const IMAGE_MODEL = 'Img/Costed';
const VIDEO_MODEL = 'Vid/Costed';
const CREDIT = '1';
const messages = [{ role: 'user' as const, content: 'say something' }];

let h: Harness;
let base: string;
beforeAll(async () => {
  h = await startHarness(
    { VIDEO_POLL_MS: '40' },
    {
      entries: (endpoints) => [
        imageModel(IMAGE_MODEL, endpoints, { perImage: '0.013' }),
        videoModel(VIDEO_MODEL, endpoints, { perSecond: '0.021' }),
      ],
    },
  );
  base = h.baseURL.replace(/\/v1$/, '');
});
afterAll(async () => h?.stop());

interface Costed {
  cost?: string;
  currency?: string;
}

/**
 * Runs `call` on a fresh account and checks that the cost it reports is the account's balance
 * change once every settlement landed (the harness waits for them), then the ledger.
 */
async function expectCostIsCharge(
  call: (secret: string) => Promise<{ usage: Costed | null | undefined; header?: string | null }>,
): Promise<void> {
  const a = await h.newAccount({ credit: CREDIT });
  const before = await h.settled(a.accountId);
  expect(before.balance).toBe(parseDecimalToNano(CREDIT));
  const { usage, header } = await call(a.secret);
  expect(usage?.currency).toBe('USD');
  expect(usage?.cost).toMatch(/^[0-9]+(\.[0-9]{1,9})?$/);
  const cost = parseDecimalToNano(usage!.cost!);
  expect(cost).toBeGreaterThan(0);
  if (header !== undefined) expect(header).toBe(usage!.cost);
  const after = await h.settled(a.accountId);
  expect(before.balance - after.balance).toBe(cost);
  expect(after.held).toBe(0);
  await expectLedgerClean(h.redis.client(), [a.accountId]);
}

const anthropic = (apiKey: string) => new Anthropic({ apiKey, baseURL: base, maxRetries: 0 });

describe('every response says what it cost (usage.cost = the balance change, exactly)', () => {
  it('BILL-7 chat completions, non-streamed: usage.cost, usage.currency and x-modelplane-cost', async () => {
    await expectCostIsCharge(async (secret) => {
      const { data, response } = await h
        .client(secret)
        .chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 12 })
        .withResponse();
      return { usage: data.usage as Costed, header: response.headers.get('x-modelplane-cost') };
    });
  });

  it('BILL-7 CHAT-3 chat completions, streamed with include_usage: the usage frame carries the cost', async () => {
    await expectCostIsCharge(async (secret) => {
      const stream = await h.client(secret).chat.completions.create({
        model: CHAT_MODEL,
        messages,
        max_tokens: 12,
        stream: true,
        stream_options: { include_usage: true },
      });
      let usage: Costed | undefined;
      let usageFrames = 0;
      for await (const chunk of stream) {
        if (chunk.usage != null) {
          usageFrames++;
          usage = chunk.usage as Costed;
        }
      }
      expect(usageFrames).toBe(1);
      return { usage };
    });
  });

  it('BILL-7 Messages, non-streamed: usage.cost, usage.currency and x-modelplane-cost', async () => {
    await expectCostIsCharge(async (secret) => {
      const { data, response } = await anthropic(secret)
        .messages.create({ model: CHAT_MODEL, max_tokens: 12, messages })
        .withResponse();
      return { usage: data.usage as Costed, header: response.headers.get('x-modelplane-cost') };
    });
  });

  it('BILL-7 MSG-7 Messages, streamed: message_delta carries the cost', async () => {
    await expectCostIsCharge(async (secret) => {
      const stream = anthropic(secret).messages.stream({ model: CHAT_MODEL, max_tokens: 12, messages });
      let delta: Costed | undefined;
      for await (const ev of stream) if (ev.type === 'message_delta') delta = ev.usage as Costed;
      await stream.finalMessage();
      return { usage: delta };
    });
  });

  it('BILL-7 Responses, non-streamed and streamed (response.completed / .incomplete): the usage carries the cost', async () => {
    await expectCostIsCharge(async (secret) => {
      const { data, response } = await h
        .client(secret)
        .responses.create({ model: CHAT_MODEL, input: 'say something', max_output_tokens: 16 })
        .withResponse();
      return { usage: data.usage as Costed, header: response.headers.get('x-modelplane-cost') };
    });
    await expectCostIsCharge(async (secret) => {
      const stream = await h
        .client(secret)
        .responses.create({ model: CHAT_MODEL, input: 'say something', max_output_tokens: 16, stream: true });
      let usage: Costed | undefined;
      // response.completed, or response.incomplete when max_output_tokens cut the answer: both final.
      for await (const ev of stream)
        if (ev.type === 'response.completed' || ev.type === 'response.incomplete')
          usage = ev.response.usage as Costed;
      return { usage };
    });
  });

  it('BILL-7 BILL-1 embeddings: usage.cost and x-modelplane-cost', async () => {
    await expectCostIsCharge(async (secret) => {
      const { data, response } = await h
        .client(secret)
        .embeddings.create({ model: EMBED_MODEL, input: ['one short text', 'and a second one'] })
        .withResponse();
      return { usage: data.usage as Costed, header: response.headers.get('x-modelplane-cost') };
    });
  });

  it('BILL-7 the console origin may read x-modelplane-cost (CORS exposes it)', async () => {
    await expectCostIsCharge(async (secret) => {
      const res = await fetch(`${h.baseURL}/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${secret}`,
          'content-type': 'application/json',
          origin: 'http://console.test', // the harness's PROXY_CORS_ORIGINS
        },
        body: JSON.stringify({ model: CHAT_MODEL, messages, max_tokens: 5 }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-expose-headers')).toContain('x-modelplane-cost');
      const body = (await res.json()) as { usage: Costed };
      return { usage: body.usage, header: res.headers.get('x-modelplane-cost') };
    });
  });

  it('BILL-7 BILL-3 images: the response carries usage.cost (per image × n) and x-modelplane-cost', async () => {
    await expectCostIsCharge(async (secret) => {
      const { data, response } = await h
        .client(secret)
        .images.generate({ model: IMAGE_MODEL, prompt: 'two foxes', n: 2, response_format: 'b64_json' })
        .withResponse();
      expect(data.data).toHaveLength(2);
      expect((data.usage as Costed).cost).toBe('0.026');
      return { usage: data.usage as Costed, header: response.headers.get('x-modelplane-cost') };
    });
  });

  it('BILL-7 BILL-4 videos: the job carries usage.cost (per second × seconds) and x-modelplane-cost', async () => {
    await expectCostIsCharge(async (secret) => {
      const { data, response } = await h
        .client(secret)
        .videos.create({ model: VIDEO_MODEL, prompt: 'a costed video', seconds: '4' })
        .withResponse();
      expect(data.status).toBe('queued');
      const usage = (data as unknown as { usage: Costed }).usage;
      expect(usage.cost).toBe('0.084');
      // The job, read again, still says what its creation charged.
      const again = await h.client(secret).videos.retrieve(data.id);
      expect((again as unknown as { usage: Costed }).usage).toEqual(usage);
      return { usage, header: response.headers.get('x-modelplane-cost') };
    });
  });
});
